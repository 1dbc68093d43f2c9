// Fence and StreamId live in core/common/fence.h; this header keeps the engine's and
// the backends' includes working.
#pragma once

#include "core/common/fence.h"
