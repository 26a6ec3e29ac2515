// tol="auto": where a greedy path may end before its last step (shared by the
// (S)OMP kernel, greedy.hpp, and the LSTM-CS kernel, lstm.hpp).
//
// After step s the path's squared residual E_s gives the residual ratio
// RR(s)^2 = E_s / E_{s-1} (1 when E_{s-1} = 0).  A ratio below Gamma(s)^2 is a
// step the residual-ratio test takes for signal; one below the looser `reset2`
// threshold is signal-like.  The path ends once the test has taken a step for
// signal and no signal-like step came in the last `patience` steps, or at step
// `check` when the test has taken a step for signal and its last one is
// <= `check_last` (the bound of the two-stage rule, stopping.py: a signal that
// ended in the path's first two thirds is not followed further).  The rules'
// tables come from python/cscore/decoders/path_stop.py.  A path depends on its
// problem's own numbers only.
#pragma once

namespace cscore {

struct PathEndRule {
    const double* gamma2 = nullptr;  // (K) Gamma(k)^2 of the residual-ratio test
    const double* reset2 = nullptr;  // (K) a step below one is still signal-like
    int patience = 0;                // steps without such a step that end the path
    int check = 0;                   // > 0: the check step (see above)
    int check_last = 0;
};

struct PathEnd {
    double prev = 0.0;    // E_{s-1}
    int last_like = 0;    // last signal-like step
    int last_signal = 0;  // last step the test took for signal
    bool signal = false;  // the test took a step for signal

    // The path's squared residual before its first step.
    void start(double e0) {
        prev = e0;
        last_like = last_signal = 0;
        signal = false;
    }

    // The squared residual e after step s >= 1 (on the scale of start's); true
    // when the path ends here.
    bool step(double e, int s, const PathEndRule& rule) {
        const double rr2 = prev > 0.0 ? e / prev : 1.0;
        prev = e;
        if (rr2 < rule.gamma2[s - 1]) {
            signal = true;
            last_signal = s;
        }
        if (rr2 < rule.reset2[s - 1]) last_like = s;
        if (!signal) return false;
        return (rule.check > 0 && s == rule.check && last_signal <= rule.check_last) ||
               s - last_like >= rule.patience;
    }
};

}  // namespace cscore
