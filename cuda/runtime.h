// @brief Is a CUDA device usable here? GPU tests and `hisparse validate --backend cuda` ask before running.
#pragma once

#include <string>

namespace hisparse::cuda {

/// True when the CUDA backend was compiled and a device answers; otherwise false and *why says which part is missing.
bool cuda_available(std::string* why = nullptr);

/// Name of device 0 ("NVIDIA H100 80GB HBM3"), or "" when none.
std::string device_name();

/// The driver's CUDA version and the runtime's ("driver CUDA 13.0, runtime 13.0"), or "" when no device: the
/// provenance a calibration file records.
std::string driver_version();

/// Streaming multiprocessors of device 0, or 0 when none.
int sm_count();

/// Whether the CUDA driver library would load, asked without initialising CUDA (what `hisparse --version` says): the
/// runtime is linked statically and opens libcuda.so.1 at the first CUDA call, so no command loads a CUDA library
/// before it needs a GPU. "" in a build without the CUDA backend.
std::string driver_load_status();

}  // namespace hisparse::cuda
