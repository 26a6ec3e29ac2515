// Stop reasons shared by all iterative decoders.
#pragma once

namespace cscore {

enum class StopReason : int {
    n_nonzero = 0,      // reached the requested number of atoms
    tol = 1,            // residual (or convergence measure) fell below tol
    dependent = 2,      // the next atom was linearly dependent / added nothing
    max_iter = 3,       // iteration cap hit
    exhausted = 4,      // no admissible atom left (e.g. all M atoms used)
};

inline const char* stop_reason_name(StopReason r) {
    switch (r) {
        case StopReason::n_nonzero: return "n_nonzero";
        case StopReason::tol: return "tol";
        case StopReason::dependent: return "dependent";
        case StopReason::max_iter: return "max_iter";
        case StopReason::exhausted: return "exhausted";
    }
    return "unknown";
}

}  // namespace cscore
