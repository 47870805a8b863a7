"""ZG290 data-dependent-trace: the finding `zgen plan` and `zgen emit` report when the trace needs values.

The rule's documentation lives here, torch-free, so the rule registry
(`zgen rule`, SARIF) lists it without importing the tracer, which reports it.
"""

from __future__ import annotations

from zgen.findings import RuleInfo, Severity

__all__ = ["TRACE_RULE"]

TRACE_RULE = RuleInfo(
    code="ZG290",
    name="data-dependent-trace",
    severity=Severity.ERROR,
    family="ZG2xx",
    summary="The model's forward needs tensor values to decide what runs (seen while tracing).",
    doc="""## What it does
Reported by `zgen plan` and `zgen emit`, which run the model once on the `meta` device: the
forward or backward stopped at this line because it needed the value of a tensor (`.item()`,
`if t.sum() > 0`, `nonzero()`, one-argument `torch.where`, `unique()`, boolean-mask indexing).

## Why is this bad under ZeRO-3?
When the value decides which submodules run, ranks whose data differ run different modules and
join different all-gathers: the job hangs. Even when every rank runs the same modules, zgen cannot
plan an order ahead of time for a forward whose module sequence depends on the data.

## Example
```python
for i, expert in enumerate(self.experts):
    rows = torch.where(choice == i)      # ZG290 here
    if rows[0].numel() == 0:
        continue
    out[rows] = expert(x[rows])
```

## Use instead
Run every expert on a possibly empty selection, or route with dense gates
(`sum(gate[..., i:i+1] * expert(x) for i, expert in enumerate(self.experts))`), so the
sequence of modules is the same on every rank. The static check reports many of these sites as
ZG203/ZG204; `zgen plan` says where the two disagree.
""",
)
