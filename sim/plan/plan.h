// @brief Umbrella header of the capacity planner (sim/plan/): step-time model, miss curves, the plan, its reports.
#pragma once

#include "sim/plan/capacity_plan.h"
#include "sim/plan/miss_curve.h"
#include "sim/plan/plan_report.h"
#include "sim/plan/step_time_model.h"
