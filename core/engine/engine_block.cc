#include "core/engine/engine_block.h"

namespace pump {

template class BasicBlockTracker<EngineBlockState>;

}  // namespace pump
