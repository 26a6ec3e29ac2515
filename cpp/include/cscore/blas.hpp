// BLAS/LAPACK reached at run time.
//
// cscore links against no BLAS at build time.  At import, the Python package
// looks up function pointers that SciPy exports from its bundled BLAS/LAPACK
// (scipy.linalg.cython_blas / cython_lapack capsules) and hands them to the
// core through `registry()`.  The products (gemm, gemv) have portable
// fallbacks, so the kernels stay correct (only slower) when no pointer was
// registered; the eigensolver wrapper reports whether LAPACK did the work.
//
// Each routine is written once over its scalar type T (float, double,
// std::complex<double>): the routine's name is the type's LAPACK letter (s, d,
// z) plus its stem.  For complex T a "transposed" operand is the conjugate
// transpose ('C'), so the same call computes A^T B for real and A^H B for
// complex matrices.  All matrices are column-major (Fortran convention).
#pragma once

#include <complex>
#include <cstddef>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

namespace cscore::blas {

// Name -> function pointer, filled once at import (under the GIL) and only read
// afterwards, so lookups from worker threads need no lock.
inline std::map<std::string, void*>& registry() {
    static std::map<std::string, void*> table;
    return table;
}

inline void* lookup(const std::string& name) {
    const auto& table = registry();
    const auto it = table.find(name);
    return it == table.end() ? nullptr : it->second;
}

template <class T>
inline constexpr bool is_complex = !std::is_floating_point_v<T>;

// The LAPACK letter of T and the real type of its entries.
template <class T>
inline constexpr char letter = std::is_same_v<T, float>    ? 's'
                               : std::is_same_v<T, double> ? 'd'
                               : std::is_same_v<T, std::complex<float>> ? 'c'
                                                                        : 'z';

// The registered routine letter<T> + stem as a Fn pointer (nullptr when absent).
// One static per (Fn, stem) instantiation site: call it from a function-local
// static so the map is searched once.
template <class Fn, class T>
inline Fn* routine(const char* stem) {
    return reinterpret_cast<Fn*>(lookup(std::string(1, letter<T>) + stem));
}

// The conjugate for complex, the value itself for real.
template <class T>
inline T conj(T x) {
    if constexpr (is_complex<T>)
        return std::conj(x);
    else
        return x;
}

template <class T>
using gemm_fn = void(const char*, const char*, const int*, const int*, const int*, const T*,
                     const T*, const int*, const T*, const int*, const T*, T*, const int*);
template <class T>
using gemv_fn = void(const char*, const int*, const int*, const T*, const T*, const int*,
                     const T*, const int*, const T*, T*, const int*);

template <class T>
inline gemm_fn<T>* gemm_ptr() {
    static gemm_fn<T>* f = routine<gemm_fn<T>, T>("gemm");
    return f;
}

template <class T>
inline gemv_fn<T>* gemv_ptr() {
    static gemv_fn<T>* f = routine<gemv_fn<T>, T>("gemv");
    return f;
}

// True when a BLAS gemm / gemv for T was registered (the fallback is used otherwise).
template <class T>
inline bool has_gemm() {
    return gemm_ptr<T>() != nullptr;
}
template <class T>
inline bool has_gemv() {
    return gemv_ptr<T>() != nullptr;
}

// BLAS's op letter for a (conjugate) transpose flag.
template <class T>
inline char op(bool trans) {
    return !trans ? 'N' : (is_complex<T> ? 'C' : 'T');
}

// C (m x n) = alpha * op(A) * op(B) + beta * C, column-major, op = (conjugate)
// transpose when the flag is set.  op(A) is m x k and op(B) is k x n.
template <class T>
inline void gemm(bool trans_a, bool trans_b, int m, int n, int k, T alpha, const T* A,
                 int lda, const T* B, int ldb, T beta, T* C, int ldc) {
    if (m <= 0 || n <= 0) return;
    if (auto* f = gemm_ptr<T>(); f != nullptr && k > 0) {
        const char ta = op<T>(trans_a), tb = op<T>(trans_b);
        f(&ta, &tb, &m, &n, &k, &alpha, A, &lda, B, &ldb, &beta, C, &ldc);
        return;
    }
    for (int j = 0; j < n; ++j) {
        T* c = C + static_cast<std::ptrdiff_t>(j) * ldc;
        if (beta == T(0)) {
            for (int i = 0; i < m; ++i) c[i] = T(0);
        } else if (beta != T(1)) {
            for (int i = 0; i < m; ++i) c[i] *= beta;
        }
        for (int p = 0; p < k; ++p) {
            const T b = trans_b ? conj(B[j + static_cast<std::ptrdiff_t>(p) * ldb])
                                : B[p + static_cast<std::ptrdiff_t>(j) * ldb];
            const T ab = alpha * b;
            if (ab == T(0)) continue;
            if (!trans_a) {
                const T* a = A + static_cast<std::ptrdiff_t>(p) * lda;
                for (int i = 0; i < m; ++i) c[i] += ab * a[i];
            } else {
                for (int i = 0; i < m; ++i) c[i] += ab * conj(A[p + static_cast<std::ptrdiff_t>(i) * lda]);
            }
        }
    }
}

// y = alpha * op(A) x + beta * y, A column-major m x n (leading dimension lda),
// op = (conjugate) transpose when trans is set; strides incx, incy > 0.  No
// operand packing, so it is the cheap product for a single vector.
template <class T>
inline void gemv(bool trans, int m, int n, T alpha, const T* A, int lda, const T* x, int incx,
                 T beta, T* y, int incy) {
    const int ny = trans ? n : m, nx = trans ? m : n;
    if (ny <= 0) return;
    if (auto* f = gemv_ptr<T>(); f != nullptr && nx > 0) {
        const char t = op<T>(trans);
        f(&t, &m, &n, &alpha, A, &lda, x, &incx, &beta, y, &incy);
        return;
    }
    for (int i = 0; i < ny; ++i) {
        T& yi = y[static_cast<std::ptrdiff_t>(i) * incy];
        yi = beta == T(0) ? T(0) : beta * yi;
    }
    for (int c = 0; c < n; ++c) {
        const T* a = A + static_cast<std::ptrdiff_t>(c) * lda;
        if (!trans) {
            const T xc = alpha * x[static_cast<std::ptrdiff_t>(c) * incx];
            for (int i = 0; i < m; ++i) y[static_cast<std::ptrdiff_t>(i) * incy] += xc * a[i];
        } else {
            T acc = T(0);
            for (int i = 0; i < m; ++i) acc += conj(a[i]) * x[static_cast<std::ptrdiff_t>(i) * incx];
            y[static_cast<std::ptrdiff_t>(c) * incy] += alpha * acc;
        }
    }
}

// LAPACK's divide-and-conquer eigensolver of a symmetric (dsyevd) or Hermitian
// (zheevd) matrix, with its workspace kept between calls.
template <class T>
struct Eigh {
    using real_fn = void(const char*, const char*, const int*, double*, const int*, double*,
                         double*, const int*, int*, const int*, int*);
    using herm_fn = void(const char*, const char*, const int*, T*, const int*, double*, T*,
                         const int*, double*, const int*, int*, const int*, int*);
    using fn = std::conditional_t<is_complex<T>, herm_fn, real_fn>;

    std::vector<T> work;
    std::vector<double> rwork;
    std::vector<int> iwork;

    static fn* get() {
        static fn* f = routine<fn, T>(is_complex<T> ? "heevd" : "syevd");
        return f;
    }
    static bool available() { return get() != nullptr; }

    // Ascending eigenvalues of the n x n column-major `a` (lower triangle read)
    // in w; its orthonormal eigenvectors overwrite a when `vectors`.  False
    // (a then undefined) when the routine is not registered or did not converge.
    bool operator()(int n, T* a, double* w, bool vectors) {
        fn* f = get();
        if (f == nullptr) return false;
        const char jobz = vectors ? 'V' : 'N', uplo = 'L';
        const int liwork = vectors ? 3 + 5 * n : 1;
        int info = 0;
        iwork.resize(static_cast<std::size_t>(liwork));
        if constexpr (is_complex<T>) {
            const int lwork = vectors ? 2 * n + n * n : n + 1;
            const int lrwork = vectors ? 1 + 5 * n + 2 * n * n : n;
            work.resize(static_cast<std::size_t>(lwork));
            rwork.resize(static_cast<std::size_t>(lrwork));
            f(&jobz, &uplo, &n, a, &n, w, work.data(), &lwork, rwork.data(), &lrwork,
              iwork.data(), &liwork, &info);
        } else {
            const int lwork = vectors ? 1 + 6 * n + 2 * n * n : 2 * n + 1;
            work.resize(static_cast<std::size_t>(lwork));
            f(&jobz, &uplo, &n, a, &n, w, work.data(), &lwork, iwork.data(), &liwork, &info);
        }
        return info == 0;
    }
};

}  // namespace cscore::blas
