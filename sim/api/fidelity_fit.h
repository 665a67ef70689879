// @brief The suite fitting itself (docs/fidelity.md): each fit of the fits file refitted from the points it names by
// bisection, every point a fit uses scored by its leave-one-out error (the fits refitted without it, or their prior
// when no other point is left), and each point's setup ranges (`plausible:`) evaluated combination by combination.
// Every evaluation is run_fidelity's own (evaluate_field_runs) with the trial value in place of the file's.
#pragma once

#include <string>
#include <vector>

#include "sim/api/fidelity_request.h"
#include "sim/fidelity/field_fits.h"

namespace hisparse::sim {

/// The fits file of `choice` ("auto" | "none" | a path) for the field entries `field` ("" = none).
std::string fits_file_of(const std::string& choice, const std::vector<std::string>& field);

/// Fills report.fits (each fit's refit) and every fit-used point's loo_error_pct / loo_note. Throws naming the fits
/// file when a fit names a point no loaded run has, a run that does not read the fit's file, or when a cost term,
/// surface or derived override marked fitted has no fit declared.
void apply_field_fits(const FidelityRequest& request, const std::vector<FieldRun>& runs,
                      const std::vector<FieldFit>& fits, FidelityReport& report);

/// Fills each point's `range` from its run's and its own `plausible:` sets (at most kMaxPlausibleCombos
/// combinations, else an error naming the file, the point and the count).
void evaluate_setup_ranges(const FidelityRequest& request, const std::vector<FieldRun>& runs, FidelityReport& report);

}  // namespace hisparse::sim
