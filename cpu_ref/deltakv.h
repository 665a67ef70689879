// @brief The reference DeltaKV reconstruction (core/numerics/deltakv_args.h): reference-row mean plus the scaled
// fp8 residual, element by element in the shared fixed order.
#pragma once

#include "core/numerics/deltakv_args.h"

namespace hisparse::cpu_ref {

/// Checks the arguments (check_deltakv_args) and writes args.out.
void deltakv_reconstruct(const DeltaKvArgs& args);

}  // namespace hisparse::cpu_ref
