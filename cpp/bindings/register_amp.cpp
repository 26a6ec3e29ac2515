// Bindings for the message-passing decoders (AMP, VAMP).  The Python layer
// (python/cscore/decoders/amp.py) validates the user's input, converts it to
// float64 C-contiguous arrays and allocates every output; this glue only checks
// that internal contract, then releases the GIL around the C++ loop.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "cscore/amp.hpp"
#include "common.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace cscore::bindings {

namespace {

using f64 = py::array_t<double, py::array::c_style>;
using i64 = py::array_t<std::int64_t, py::array::c_style>;
using i8 = py::array_t<std::int8_t, py::array::c_style>;

void require(bool ok, const char* fn, const std::string& what) {
    if (!ok) throw std::invalid_argument(std::string(fn) + ": " + what);
}

// Strict views: exact dtype and C order, no conversion (a copy would silently
// drop the kernel's writes).
template <class T>
py::array_t<T, py::array::c_style> view(const py::array& a, const char* fn, const char* name) {
    require(py::isinstance<py::array_t<T, py::array::c_style>>(a) &&
                (a.flags() & py::array::c_style) &&
                a.dtype().num() == py::dtype::of<T>().num(),
            fn, std::string(name) + " must be a C-contiguous array of the kernel's dtype");
    return py::reinterpret_borrow<py::array_t<T, py::array::c_style>>(a);
}

// Checks the preallocated outputs and returns their buffers (the arrays stay
// alive as the caller's arguments).
amp::Outputs check_outputs(const char* fn, py::array X, py::array act, py::array params,
                           py::array n_iter, py::array stop, py::array damp, std::ptrdiff_t P,
                           std::ptrdiff_t N, std::ptrdiff_t L) {
    const f64 x = view<double>(X, fn, "X"), a = view<double>(act, fn, "activity"),
              pr = view<double>(params, fn, "params"), dm = view<double>(damp, fn, "damping");
    const i64 it = view<std::int64_t>(n_iter, fn, "n_iter");
    const i8 st = view<std::int8_t>(stop, fn, "stop");
    require(x.ndim() == 3 && x.shape(0) == P && x.shape(1) == N && x.shape(2) == L, fn,
            "X must be (P, N, L)");
    require(a.ndim() == 3 && a.shape(0) == P && a.shape(1) == N && a.shape(2) == L, fn,
            "activity must be (P, N, L)");
    require(pr.ndim() == 3 && pr.shape(0) == P && pr.shape(1) == L && pr.shape(2) == 3, fn,
            "params must be (P, L, 3)");
    for (const py::array* v : {static_cast<const py::array*>(&it),
                               static_cast<const py::array*>(&st),
                               static_cast<const py::array*>(&dm)})
        require(v->ndim() == 2 && v->shape(0) == P && v->shape(1) == L, fn,
                "n_iter, stop, damping must be (P, L)");
    for (const py::array* v : {&X, &act, &params, &damp, &n_iter, &stop})
        require(v->writeable(), fn, "outputs must be writeable");
    amp::Outputs out;
    out.X = static_cast<double*>(X.mutable_data());
    out.activity = static_cast<double*>(act.mutable_data());
    out.params = static_cast<double*>(params.mutable_data());
    out.n_iter = static_cast<std::int64_t*>(n_iter.mutable_data());
    out.stop = static_cast<std::int8_t*>(stop.mutable_data());
    out.damping = static_cast<double*>(damp.mutable_data());
    return out;
}

amp::Options make_options(const char* fn, int denoiser, bool joint, long max_iter, double tol,
                          double damping, double alpha, double sparsity, bool learn_sparsity,
                          double slab_var, double noise_var, double snr0) {
    require(denoiser == 0 || denoiser == 1, fn, "denoiser must be 0 (l1) or 1 (bg)");
    require(max_iter >= 1, fn, "max_iter must be >= 1");
    require(tol >= 0.0, fn, "tol must be >= 0");
    require(damping >= 0.0 && damping < 1.0, fn, "damping must be in [0, 1)");
    require(alpha >= 0.0, fn, "alpha must be >= 0");
    require(sparsity > 0.0 && sparsity < 1.0, fn, "sparsity must be in (0, 1)");
    require(snr0 > 0.0, fn, "snr0 must be > 0");
    amp::Options opt;
    opt.denoiser = denoiser == 1 ? amp::Denoiser::bg : amp::Denoiser::l1;
    opt.joint = joint;
    opt.max_iter = max_iter;
    opt.tol = tol;
    opt.damping = damping;
    opt.alpha = alpha;
    opt.sparsity = sparsity;
    opt.learn_sparsity = learn_sparsity;
    opt.slab_var = slab_var;
    opt.noise_var = noise_var;
    opt.snr0 = snr0;
    return opt;
}

// The checks both calls make once their inputs are read (sizes, threads, outputs,
// options), with the options and the output buffers.
struct Call {
    amp::Options opt;
    amp::Outputs out;
};

Call check_call(const char* fn, std::ptrdiff_t P, std::ptrdiff_t M, std::ptrdiff_t N,
                std::ptrdiff_t L, int n_threads, py::array X, py::array activity,
                py::array params, py::array n_iter, py::array stop, py::array damping_out,
                int denoiser, bool joint, long max_iter, double tol, double damping, double alpha,
                double sparsity, bool learn_sparsity, double slab_var, double noise_var,
                double snr0) {
    require(M <= INT32_MAX && N <= INT32_MAX && L <= INT32_MAX, fn, "dimensions too large");
    require(n_threads >= 1, fn, "n_threads must be >= 1");
    Call c;
    c.out = check_outputs(fn, X, activity, params, n_iter, stop, damping_out, P, N, L);
    c.opt = make_options(fn, denoiser, joint, max_iter, tol, damping, alpha, sparsity,
                         learn_sparsity, slab_var, noise_var, snr0);
    return c;
}

void amp_decode(const py::array& A, double frob2, const py::array& Y, py::array X,
                py::array activity, py::array params, py::array n_iter, py::array stop,
                py::array damping_out, int denoiser, bool joint, long max_iter, double tol,
                double damping, double alpha, double sparsity, bool learn_sparsity,
                double slab_var, double noise_var, double snr0, int n_threads) {
    const char* fn = "_amp_decode";
    const f64 a = view<double>(A, fn, "A"), y = view<double>(Y, fn, "Y");
    require(a.ndim() == 2 && y.ndim() == 3, fn, "A must be 2-D and Y 3-D (P, M, L)");
    const std::ptrdiff_t M = a.shape(0), N = a.shape(1), P = y.shape(0), L = y.shape(2);
    require(y.shape(1) == M && M >= 1 && N >= 1 && L >= 1, fn, "shapes of A and Y disagree");
    require(frob2 > 0.0, fn, "frob2 must be > 0");
    const Call c = check_call(fn, P, M, N, L, n_threads, X, activity, params, n_iter, stop,
                              damping_out, denoiser, joint, max_iter, tol, damping, alpha,
                              sparsity, learn_sparsity, slab_var, noise_var, snr0);
    const double* ap = a.data();
    const double* yp = y.data();
    run_released([&](Control* ctl) {
        amp::amp_decode(ap, M, N, frob2, yp, P, L, c.opt, c.out, n_threads, ctl);
    });
}

void vamp_decode(const py::array& U, const py::array& s, const py::array& Vt, const py::array& Y,
                 py::array X, py::array activity, py::array params, py::array n_iter,
                 py::array stop, py::array damping_out, int denoiser, bool joint, long max_iter,
                 double tol, double damping, double alpha, double sparsity, bool learn_sparsity,
                 double slab_var, double noise_var, double snr0, int n_threads) {
    const char* fn = "_vamp_decode";
    const f64 u = view<double>(U, fn, "U"), sv = view<double>(s, fn, "s"),
              vt = view<double>(Vt, fn, "Vt"), y = view<double>(Y, fn, "Y");
    require(u.ndim() == 2 && sv.ndim() == 1 && vt.ndim() == 2 && y.ndim() == 3, fn,
            "U, s, Vt must be 2-D, 1-D, 2-D and Y 3-D (P, M, L)");
    const std::ptrdiff_t M = u.shape(0), R = u.shape(1), N = vt.shape(1), P = y.shape(0),
                         L = y.shape(2);
    require(sv.shape(0) == R && vt.shape(0) == R && y.shape(1) == M && M >= 1 && N >= 1 &&
                R >= 1 && L >= 1,
            fn, "shapes of U, s, Vt and Y disagree");
    const Call c = check_call(fn, P, M, N, L, n_threads, X, activity, params, n_iter, stop,
                              damping_out, denoiser, joint, max_iter, tol, damping, alpha,
                              sparsity, learn_sparsity, slab_var, noise_var, snr0);
    const double* up = u.data();
    const double* sp = sv.data();
    const double* vp = vt.data();
    const double* yp = y.data();
    run_released([&](Control* ctl) {
        amp::vamp_decode(up, sp, vp, M, N, R, yp, P, L, c.opt, c.out, n_threads, ctl);
    });
}

}  // namespace

void register_amp(py::module_& m) {
    m.def("_amp_decode", &amp_decode, py::arg("A"), py::arg("frob2"), py::arg("Y"), py::arg("X"),
          py::arg("activity"), py::arg("params"), py::arg("n_iter"), py::arg("stop"),
          py::arg("damping_out"), py::arg("denoiser"), py::arg("joint"), py::arg("max_iter"),
          py::arg("tol"), py::arg("damping"), py::arg("alpha"), py::arg("sparsity"),
          py::arg("learn_sparsity"), py::arg("slab_var"), py::arg("noise_var"), py::arg("snr0"),
          py::arg("n_threads"),
          "AMP decode of P problems Y (P, M, L) into preallocated outputs "
          "(internal; use cscore.decoders.amp.amp).");
    m.def("_vamp_decode", &vamp_decode, py::arg("U"), py::arg("s"), py::arg("Vt"), py::arg("Y"),
          py::arg("X"), py::arg("activity"), py::arg("params"), py::arg("n_iter"),
          py::arg("stop"), py::arg("damping_out"), py::arg("denoiser"), py::arg("joint"),
          py::arg("max_iter"), py::arg("tol"), py::arg("damping"), py::arg("alpha"),
          py::arg("sparsity"), py::arg("learn_sparsity"), py::arg("slab_var"),
          py::arg("noise_var"), py::arg("snr0"), py::arg("n_threads"),
          "VAMP (SVD form) decode of P problems Y (P, M, L) into preallocated outputs "
          "(internal; use cscore.decoders.amp.vamp).");
}

}  // namespace cscore::bindings
