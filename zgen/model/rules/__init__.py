"""The model rules, one module and one class each; `ALL_RULES` lists them in code order."""

from __future__ import annotations

from .rule import Rule
from .zg101_partitioned_data_write import PartitionedDataWrite
from .zg102_placeholder_size_query import PlaceholderSizeQuery
from .zg103_init_after_partition import InitAfterPartition
from .zg104_reparametrize_after_partition import ReparametrizeAfterPartition
from .zg105_deepcopy_after_partition import DeepcopyAfterPartition
from .zg106_created_in_forward import CreatedInForward
from .zg107_clip_grad_partitioned import ClipGradPartitioned
from .zg108_unconsolidated_state_dict import UnconsolidatedStateDict
from .zg109_partitioned_data_read import PartitionedDataRead
from .zg110_forward_in_init import ForwardInInit
from .zg201_rank_gated_call import RankGatedCall
from .zg202_random_layer_skip import RandomLayerSkip
from .zg203_data_dependent_experts import DataDependentSubmodules
from .zg204_data_dependent_exit import DataDependentExit
from .zg205_optional_input_skips_module import OptionalInputSkipsModule
from .zg301_external_parameter_read import ExternalParameterRead
from .zg302_forward_bypass import ForwardBypass
from .zg303_child_method_bypass import ChildMethodBypass
from .zg901_unparsable import Unparsable

ALL_RULES: tuple[type[Rule], ...] = (
    PartitionedDataWrite,
    PlaceholderSizeQuery,
    InitAfterPartition,
    ReparametrizeAfterPartition,
    DeepcopyAfterPartition,
    CreatedInForward,
    ClipGradPartitioned,
    UnconsolidatedStateDict,
    PartitionedDataRead,
    ForwardInInit,
    RankGatedCall,
    RandomLayerSkip,
    DataDependentSubmodules,
    DataDependentExit,
    OptionalInputSkipsModule,
    ExternalParameterRead,
    ForwardBypass,
    ChildMethodBypass,
    Unparsable,
)

__all__ = ["ALL_RULES", "Rule"]
