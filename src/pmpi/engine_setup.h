// Building a communicator's engine (collectively, at its first engine call) and the
// process-wide engine settings.
#pragma once

#include <vector>

#include "coll/engine.h"
#include "coll/tune.h"
#include "pmpi/comm_state.h"

namespace gcoll {

// The user's GCOLL_TUNE rules (empty when unset or invalid; an invalid value is
// reported once).
const std::vector<TuneRule> &user_tune_rules();

// The engine of cs->comm. The first call is collective over the communicator: it builds
// the topology, the node memory space and the rail transport, and all ranks agree on the
// outcome (and on the settings that shape the schedule) before anything else happens.
// NotSupported (on every rank alike) when the engine cannot serve this communicator.
Status engine_for(CommState *cs, Engine **out);

// Points the engine at the memory space of a call (e->space, e->work, e->chunk_bytes).
// Device: the first device call on the communicator creates the device space
// collectively (mem is agreed, so every rank comes here together) on `device`, and all
// ranks agree on the outcome; NotSupported on every rank alike when there is none
// (several nodes: until the inter-node phase runs on device memory, those calls are
// staged; or a rank could not map its peers).
Status select_space(CommState *cs, Engine *e, MemKind mem, int device);

}  // namespace gcoll
