// @brief Umbrella header of the discrete-event cost model (sim/).
#pragma once

#include "sim/chrome_trace.h"
#include "sim/cost_params.h"
#include "sim/decode_cost_model.h"
#include "sim/event.h"
#include "sim/link_model.h"
#include "sim/maxmin_solver.h"
#include "sim/miss_model.h"
#include "sim/network_resource.h"
#include "sim/serving_report.h"
#include "sim/serving_simulation.h"
#include "sim/sim_time.h"
#include "sim/simulator.h"
#include "sim/step_cost.h"
#include "sim/workload.h"
