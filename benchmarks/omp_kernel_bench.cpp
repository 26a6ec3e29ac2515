// The OMP kernel alone, without Python (issue 23): us per vector of
// cscore::greedy::decode on the setting of benchmarks/bench_greedy.py (A 72 x 144
// Gaussian with unit columns, 20,000 vectors y (M, B) C-ordered with k = 20
// nonzeros, n_nonzero = 20, float64, one thread), best of R runs, and an FNV hash
// of every output (X, residual, n_iter, stop, atoms) so that two builds, or two
// CSCORE_ISA settings, can be compared bit for bit.
//
//   g++ -std=c++17 -O3 -fno-math-errno -Icpp/include -pthread
//       benchmarks/omp_kernel_bench.cpp -o /tmp/omp_kernel      (one line)
//   /tmp/omp_kernel [B] [repeats] [k] [M] [N]
//   CSCORE_ISA=generic /tmp/omp_kernel 2000 3
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <ctime>
#include <vector>

#include "cscore/greedy.hpp"

namespace {

std::uint64_t fnv(const void* p, std::size_t n, std::uint64_t h) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

}  // namespace

int main(int argc, char** argv) {
    const std::ptrdiff_t B = argc > 1 ? std::atol(argv[1]) : 20000;
    const int repeats = argc > 2 ? std::atoi(argv[2]) : 7;
    const std::ptrdiff_t k = argc > 3 ? std::atol(argv[3]) : 20;
    const std::ptrdiff_t M = argc > 4 ? std::atol(argv[4]) : 72, N = argc > 5 ? std::atol(argv[5]) : 144;
    std::mt19937_64 rng(1);
    std::normal_distribution<double> g;
    std::vector<double> A(static_cast<std::size_t>(M * N));
    for (auto& v : A) v = g(rng);
    for (std::ptrdiff_t j = 0; j < N; ++j) {
        double s = 0;
        for (std::ptrdiff_t i = 0; i < M; ++i) s += A[i * N + j] * A[i * N + j];
        for (std::ptrdiff_t i = 0; i < M; ++i) A[i * N + j] /= std::sqrt(s);
    }
    // y (M, B) C-ordered: problem p is column p.
    std::vector<double> Y(static_cast<std::size_t>(M * B), 0.0);
    std::vector<std::ptrdiff_t> perm(static_cast<std::size_t>(N));
    for (std::ptrdiff_t p = 0; p < B; ++p) {
        for (std::ptrdiff_t j = 0; j < N; ++j) perm[j] = j;
        for (std::ptrdiff_t t = 0; t < k; ++t) {
            const std::ptrdiff_t r = t + static_cast<std::ptrdiff_t>(rng() % static_cast<std::uint64_t>(N - t));
            std::swap(perm[t], perm[r]);
            const double v = g(rng);
            for (std::ptrdiff_t i = 0; i < M; ++i) Y[i * B + p] += A[i * N + perm[t]] * v;
        }
    }
    std::vector<double> X(static_cast<std::size_t>(N * B)), res(static_cast<std::size_t>(B));
    std::vector<std::int64_t> n_iter(static_cast<std::size_t>(B)), atoms(static_cast<std::size_t>(B * k));
    std::vector<std::int8_t> stop(static_cast<std::size_t>(B));
    std::vector<std::uint8_t> warn(static_cast<std::size_t>(B));
    cscore::greedy::View3<const double> yv{Y.data(), 1, B, 0};
    cscore::greedy::Outputs<double> out;
    out.X = cscore::greedy::View3<double>{X.data(), 1, B, 0};
    out.residual = res.data();
    out.n_iter = n_iter.data();
    out.stop = stop.data();
    out.warn = warn.data();
    out.atoms = atoms.data();
    cscore::greedy::Options opt;
    opt.max_atoms = k;
    // Thread CPU time as well as wall time: on a shared machine the wall time
    // includes the time the thread waited for a core.
    const auto cpu_now = [] {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
    };
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        const double c0 = cpu_now();
        cscore::greedy::decode<double>(A.data(), M, N, N, yv, B, 1, opt, out, 1);
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::min(best, t);
        best_cpu = std::min(best_cpu, cpu_now() - c0);
    }
    if (const char* dump = std::getenv("OMP_DUMP")) {  // raw X, residual, atoms
        if (FILE* f = std::fopen(dump, "wb")) {
            std::fwrite(X.data(), sizeof(double), X.size(), f);
            std::fwrite(res.data(), sizeof(double), res.size(), f);
            std::fwrite(atoms.data(), 8, atoms.size(), f);
            std::fclose(f);
        }
    }
    std::uint64_t h = 1469598103934665603ull;
    h = fnv(X.data(), X.size() * sizeof(double), h);
    h = fnv(res.data(), res.size() * sizeof(double), h);
    h = fnv(n_iter.data(), n_iter.size() * 8, h);
    h = fnv(stop.data(), stop.size(), h);
    h = fnv(atoms.data(), atoms.size() * 8, h);
    std::printf("isa %s  B %td  k %td  best of %d: %.3f us/vector cpu %.3f  hash %016llx\n",
                cscore::cpu::isa_name(cscore::cpu::active_isa()), B, k, repeats, best / B * 1e6,
                best_cpu / B * 1e6, static_cast<unsigned long long>(h));
    return 0;
}
