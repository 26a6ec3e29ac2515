// One-problem latency of the compiled LSTM-CS decoder without Python (issue 23).
//
// A 512-cell paper-cell model with random weights (M=72, N=144, L=4, k=20, the
// setting of benchmarks/bench_lstm_speed.py), 16 problems.  Checks, then times:
//   * every problem decoded alone on the few-problems path (panel layout) gives
//     the bits of the same problem decoded in the batch of 16 (batch kernel) and
//     alone on the batch kernel (no panels); the same with the float16 layout
//     against the batch kernel on the float16-rounded weights;
//   * ms per call, one problem per call: few-problems path (float32, float16),
//     batch kernel.
// Prints a hash of the batch outputs so that runs under different CSCORE_ISA
// values can be compared (avx2 and avx512 must print the same hash).
//
//   g++ -std=c++17 -O3 -fno-math-errno -Icpp/include -pthread
//       benchmarks/lstm_latency_native.cpp -o /tmp/lstm_latency      (one line)
//   CSCORE_ISA=avx2 /tmp/lstm_latency [H N]
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "cscore/lstm.hpp"

namespace {

using cscore::lstm::idx;
namespace L = cscore::lstm;

// IEEE half from float, round to nearest even (normal and subnormal range; the
// weights here are far from overflow).
std::uint16_t to_half(float f) {
    std::uint32_t x;
    std::memcpy(&x, &f, 4);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const int e = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
    std::uint32_t mant = x & 0x7fffffu;
    if (e <= 0) {  // subnormal half (or zero)
        if (e < -10) return static_cast<std::uint16_t>(sign);
        mant |= 0x800000u;
        const int shift = 14 - e;
        std::uint32_t h = mant >> shift;
        const std::uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) ++h;
        return static_cast<std::uint16_t>(sign | h);
    }
    std::uint32_t h = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
    const std::uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent
    return static_cast<std::uint16_t>(sign | h);
}

float from_half(std::uint16_t h) {
    const std::uint32_t sign = (h & 0x8000u) << 16;
    int e = (h >> 10) & 0x1f;
    std::uint32_t mant = h & 0x3ffu, x;
    if (e == 0) {
        if (mant == 0) {
            x = sign;
        } else {
            e = 1;
            while (!(mant & 0x400u)) {
                mant <<= 1;
                --e;
            }
            mant &= 0x3ffu;
            x = sign | (static_cast<std::uint32_t>(e - 15 + 127) << 23) | (mant << 13);
        }
    } else {
        x = sign | (static_cast<std::uint32_t>(e - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

// The panel layout of W (m, k) row-major (see lstm::Weights::WRp).
template <class Out, class Conv>
std::vector<Out> panels(const std::vector<float>& W, int m, int k, Conv conv) {
    const int mp = L::panel_rows(m);
    std::vector<Out> out(static_cast<std::size_t>(mp) * k, conv(0.0f));
    for (int p0 = 0; p0 < mp; p0 += L::kPanel) {
        const int wd = std::min(L::kPanel, mp - p0);
        for (int kk = 0; kk < k; ++kk)
            for (int r = 0; r < wd && p0 + r < m; ++r)
                out[static_cast<std::size_t>(p0) * k + static_cast<std::size_t>(kk) * wd + r] =
                    conv(W[static_cast<std::size_t>(p0 + r) * k + kk]);
    }
    return out;
}

struct Outputs {
    std::vector<double> S, resid;
    std::vector<std::int64_t> atoms, n_iter;
    std::vector<std::int32_t> stop;
    Outputs(idx B, int N, int L_, int k)
        : S(static_cast<std::size_t>(B * N * L_)), resid(static_cast<std::size_t>(B * L_)),
          atoms(static_cast<std::size_t>(B * L_ * k)), n_iter(static_cast<std::size_t>(B)),
          stop(static_cast<std::size_t>(B)) {}
    L::DecodeOutput view(idx b0 = 0, int N = 0, int L_ = 0, int k = 0) {
        L::DecodeOutput o;
        o.S = S.data() + b0 * N * L_;
        o.resid = resid.data() + b0 * L_;
        o.atoms = atoms.data() + b0 * L_ * k;
        o.n_iter = n_iter.data() + b0;
        o.stop = stop.data() + b0;
        return o;
    }
    bool operator==(const Outputs& o) const {
        return std::memcmp(S.data(), o.S.data(), S.size() * 8) == 0 &&
               std::memcmp(resid.data(), o.resid.data(), resid.size() * 8) == 0 &&
               atoms == o.atoms && n_iter == o.n_iter && stop == o.stop;
    }
    std::uint64_t hash() const {
        std::uint64_t h = 1469598103934665603ull;
        auto mix = [&h](const void* p, std::size_t n) {
            const unsigned char* c = static_cast<const unsigned char*>(p);
            for (std::size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
        };
        mix(S.data(), S.size() * 8);
        mix(resid.data(), resid.size() * 8);
        mix(atoms.data(), atoms.size() * 8);
        return h;
    }
};

}  // namespace

int main(int argc, char** argv) {
    // optional: H N (other sizes, e.g. for a sanitizer run over narrower last panels)
    const int H = argc > 2 ? std::atoi(argv[1]) : 512, N = argc > 2 ? std::atoi(argv[2]) : 144;
    const int M = 72, Lc = 4, G = 3, k = 20, B = 16;
    std::mt19937 gen(20161122);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int K = M + H;
    std::vector<float> WR(static_cast<std::size_t>(G * H) * K), b(G * H), U(N * H), c_out(N);
    for (int r = 0; r < G * H; ++r)
        for (int c = 0; c < K; ++c)
            WR[static_cast<std::size_t>(r) * K + c] = nd(gen) / std::sqrt(c < M ? float(M) : float(H));
    for (float& v : b) v = 0.1f * nd(gen);
    for (float& v : U) v = 2.0f * nd(gen) / std::sqrt(float(H));
    for (float& v : c_out) v = 0.1f * nd(gen);
    std::vector<double> At(static_cast<std::size_t>(N) * M), norms(N);
    for (int a = 0; a < N; ++a) {
        double s = 0;
        for (int m = 0; m < M; ++m) s += std::pow(At[a * M + m] = nd(gen), 2);
        norms[a] = 1.0;
        for (int m = 0; m < M; ++m) At[a * M + m] /= std::sqrt(s);
    }
    std::vector<double> Y(static_cast<std::size_t>(B) * M * Lc, 0.0);
    std::uniform_int_distribution<int> pick(0, N - 1);
    for (int p = 0; p < B; ++p)
        for (int j = 0; j < Lc; ++j)
            for (int t = 0; t < k; ++t) {
                const int a = pick(gen);
                const double s = nd(gen);
                for (int m = 0; m < M; ++m) Y[(static_cast<std::size_t>(p) * M + m) * Lc + j] += s * At[a * M + m];
            }
    for (double& v : Y) v += 0.005 * nd(gen);

    auto same = [](float v) { return v; };
    const std::vector<float> WRp = panels<float>(WR, G * H, K, same), Up = panels<float>(U, N, H, same);
    const std::vector<std::uint16_t> WRh = panels<std::uint16_t>(WR, G * H, K, to_half),
                                     Uh = panels<std::uint16_t>(U, N, H, to_half);
    std::vector<float> WR16(WR), U16(U);  // the float16-rounded weights for the batch kernel
    for (float& v : WR16) v = from_half(to_half(v));
    for (float& v : U16) v = from_half(to_half(v));

    L::Weights<float> w;
    w.cell = L::Cell::paper;
    w.H = H, w.M = M, w.N = N, w.WR = WR.data(), w.b = b.data(), w.U = U.data(), w.c_out = c_out.data();
    L::Weights<float> wp = w, w16 = w, wh = w;
    wp.WRp = WRp.data(), wp.Up = Up.data();
    w16.WR = WR16.data(), w16.U = U16.data();
    wh.WR = WR16.data(), wh.U = U16.data(), wh.WRh = WRh.data(), wh.Uh = Uh.data();

    L::DecodeOptions opt;
    opt.k_max = k;
    auto decode_batch = [&](const L::Weights<float>& ww) {
        Outputs o(B, N, Lc, k);
        L::decode(ww, At.data(), norms.data(), Y.data(), B, Lc, opt, o.view());
        return o;
    };
    auto decode_alone = [&](const L::Weights<float>& ww) {
        Outputs o(B, N, Lc, k);
        for (idx p = 0; p < B; ++p)
            L::decode(ww, At.data(), norms.data(), Y.data() + p * M * Lc, 1, Lc, opt,
                      o.view(p, N, Lc, k));
        return o;
    };
    const Outputs batch = decode_batch(w), batch16 = decode_batch(w16);
    const bool ok32 = decode_alone(wp) == batch && decode_alone(w) == batch;
    const bool ok16 = decode_alone(wh) == batch16;
    std::printf("instruction set %s; %d cells, M=72, N=%d, L=4, k=20, %d problems\n",
                cscore::cpu::isa_name(cscore::cpu::active_isa()), H, N, B);
    std::printf("alone (few-problems path and batch kernel) == batch: float32 %s, float16 %s\n",
                ok32 ? "yes" : "NO", ok16 ? "yes" : "NO");
    std::printf("batch output hash: float32 %016llx float16 %016llx\n",
                static_cast<unsigned long long>(batch.hash()),
                static_cast<unsigned long long>(batch16.hash()));
    auto time_alone = [&](const L::Weights<float>& ww) {
        double best = 1e9;
        for (int r = 0; r < 5; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            decode_alone(ww);
            const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            best = std::min(best, t / B);
        }
        return 1e3 * best;
    };
    const double t32 = time_alone(wp), t16 = time_alone(wh), tb = time_alone(w);
    std::printf("ms per call, one problem per call (best of 5 x %d): few-problems float32 %.2f, "
                "float16 %.2f, batch kernel %.2f\n", B, t32, t16, tb);
    return ok32 && ok16 ? 0 : 1;
}
