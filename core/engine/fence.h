// Fence and StreamId live in core/common/fence.h (the tracker below the engine uses
// them); this header keeps the engine's and the backends' includes working.
#pragma once

#include "core/common/fence.h"
