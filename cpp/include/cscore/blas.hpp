// BLAS/LAPACK reached at run time.
//
// cscore links against no BLAS at build time.  At import, the Python package
// looks up function pointers that SciPy exports from its bundled BLAS/LAPACK
// (scipy.linalg.cython_blas / cython_lapack capsules) and hands them to the
// core through `registry()`.  Every routine here has a portable fallback, so
// the kernels stay correct (only slower) when no pointer was registered.
//
// All matrices are column-major (Fortran convention), as BLAS expects.
#pragma once

#include <cstddef>
#include <map>
#include <string>

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

using sgemm_fn = void(const char*, const char*, const int*, const int*, const int*,
                      const float*, const float*, const int*, const float*, const int*,
                      const float*, float*, const int*);
using dgemm_fn = void(const char*, const char*, const int*, const int*, const int*,
                      const double*, const double*, const int*, const double*, const int*,
                      const double*, double*, const int*);

template <class T>
struct gemm_ptr;
template <>
struct gemm_ptr<float> {
    static sgemm_fn* get() {
        static sgemm_fn* f = reinterpret_cast<sgemm_fn*>(lookup("sgemm"));
        return f;
    }
};
template <>
struct gemm_ptr<double> {
    static dgemm_fn* get() {
        static dgemm_fn* f = reinterpret_cast<dgemm_fn*>(lookup("dgemm"));
        return f;
    }
};

// True when a BLAS gemm for T was registered (the fallback is used otherwise).
template <class T>
inline bool has_gemm() {
    return gemm_ptr<T>::get() != nullptr;
}

// C (m x n) = alpha * op(A) * op(B) + beta * C, column-major, op = transpose when
// the flag is set.  op(A) is m x k and op(B) is k x n.
template <class T>
inline void gemm(bool trans_a, bool trans_b, int m, int n, int k, T alpha, const T* A,
                 int lda, const T* B, int ldb, T beta, T* C, int ldc) {
    if (m <= 0 || n <= 0) return;
    if (auto* f = gemm_ptr<T>::get(); f != nullptr && k > 0) {
        const char ta = trans_a ? 'T' : 'N';
        const char tb = trans_b ? 'T' : 'N';
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
            const T b = trans_b ? B[j + static_cast<std::ptrdiff_t>(p) * ldb]
                                : B[p + static_cast<std::ptrdiff_t>(j) * ldb];
            const T ab = alpha * b;
            if (ab == T(0)) continue;
            if (!trans_a) {
                const T* a = A + static_cast<std::ptrdiff_t>(p) * lda;
                for (int i = 0; i < m; ++i) c[i] += ab * a[i];
            } else {
                for (int i = 0; i < m; ++i) c[i] += ab * A[p + static_cast<std::ptrdiff_t>(i) * lda];
            }
        }
    }
}

using sgemv_fn = void(const char*, const int*, const int*, const float*, const float*,
                      const int*, const float*, const int*, const float*, float*, const int*);
using dgemv_fn = void(const char*, const int*, const int*, const double*, const double*,
                      const int*, const double*, const int*, const double*, double*, const int*);

template <class T>
struct gemv_ptr;
template <>
struct gemv_ptr<float> {
    static sgemv_fn* get() {
        static sgemv_fn* f = reinterpret_cast<sgemv_fn*>(lookup("sgemv"));
        return f;
    }
};
template <>
struct gemv_ptr<double> {
    static dgemv_fn* get() {
        static dgemv_fn* f = reinterpret_cast<dgemv_fn*>(lookup("dgemv"));
        return f;
    }
};

// True when a BLAS gemv for T was registered (the fallback is used otherwise).
template <class T>
inline bool has_gemv() {
    return gemv_ptr<T>::get() != nullptr;
}

// y = alpha * op(A) x + beta * y, A column-major m x n (leading dimension lda),
// op = transpose when trans is set; strides incx, incy > 0.  No operand packing,
// so it is the cheap product for a single vector.
template <class T>
inline void gemv(bool trans, int m, int n, T alpha, const T* A, int lda, const T* x, int incx,
                 T beta, T* y, int incy) {
    const int ny = trans ? n : m, nx = trans ? m : n;
    if (ny <= 0) return;
    if (auto* f = gemv_ptr<T>::get(); f != nullptr && nx > 0) {
        const char t = trans ? 'T' : 'N';
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
            for (int i = 0; i < m; ++i) acc += a[i] * x[static_cast<std::ptrdiff_t>(i) * incx];
            y[static_cast<std::ptrdiff_t>(c) * incy] += alpha * acc;
        }
    }
}

}  // namespace cscore::blas
