// Run-time choice of instruction set, shared by every kernel that has more than
// one build of itself (greedy.hpp, lstm.hpp).
//
// Levels, each including the one before:
//   generic  the portable code, compiled for the build's baseline target (no
//            x86 intrinsics are chosen at run time); the only level on anything
//            other than x86 with GCC/Clang (arm64, MSVC, ...)
//   avx2     x86 with AVX2 and FMA
//   avx512   the above plus AVX-512F (all the AVX-512 kernels use)
// The CPU's level is found with __builtin_cpu_supports (which also checks that
// the operating system saves the wider registers).
//
// The environment variable CSCORE_ISA caps the level: "generic", "avx2",
// "avx512" (any case, surrounding blanks ignored); unset, empty or "auto" means
// the best the CPU supports.  Asking for more than the CPU supports gives what it
// supports.  Any other value counts as "auto" and is flagged as not recognized
// (isa_setting().recognized) so that the Python package can report it.
// CSCORE_DISABLE_AVX2, a deprecated alias, set to a non-empty value other than
// "0" means CSCORE_ISA=generic; it is read only when CSCORE_ISA is unset or
// empty.  The environment is read once per process, on first use.
#pragma once

#include <cctype>
#include <cstdlib>
#include <string>

namespace cscore::cpu {

enum class Isa : int { generic = 0, avx2 = 1, avx512 = 2 };

inline const char* isa_name(Isa isa) noexcept {
    switch (isa) {
        case Isa::avx512:
            return "avx512";
        case Isa::avx2:
            return "avx2";
        case Isa::generic:
            break;
    }
    return "generic";
}

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define CSCORE_CPU_X86 1
#endif

// The best level this CPU (and operating system) supports; detected once.
inline Isa supported_isa() noexcept {
#ifdef CSCORE_CPU_X86
    static const Isa best = [] {
        __builtin_cpu_init();
        if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return Isa::generic;
        if (!__builtin_cpu_supports("avx512f")) return Isa::avx2;
        return Isa::avx512;
    }();
    return best;
#else
    return Isa::generic;
#endif
}

// What the environment asked for and what is used.
struct IsaSetting {
    Isa supported = Isa::generic;  // best the CPU supports
    Isa active = Isa::generic;     // what the kernels use: min(requested, supported)
    std::string variable;          // the variable that decided (empty: none set)
    std::string value;             // its value as given
    bool recognized = true;        // false: CSCORE_ISA had an unknown value (taken as auto)
};

namespace detail {

// Parses a CSCORE_ISA value into `cap`; "auto" (and empty) leave it unchanged.
// Returns false for an unknown value.
inline bool parse_isa(const std::string& raw, Isa& cap) {
    std::size_t b = 0, e = raw.size();
    while (b < e && std::isspace(static_cast<unsigned char>(raw[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(raw[e - 1]))) --e;
    std::string s;
    for (std::size_t i = b; i < e; ++i)
        s += static_cast<char>(std::tolower(static_cast<unsigned char>(raw[i])));
    if (s.empty() || s == "auto") return true;
    if (s == "generic") {
        cap = Isa::generic;
    } else if (s == "avx2") {
        cap = Isa::avx2;
    } else if (s == "avx512") {
        cap = Isa::avx512;
    } else {
        return false;
    }
    return true;
}

inline IsaSetting read_isa_setting() {
    IsaSetting st;
    st.supported = supported_isa();
    Isa cap = Isa::avx512;
    const char* isa = std::getenv("CSCORE_ISA");
    if (isa != nullptr && isa[0] != '\0') {
        st.variable = "CSCORE_ISA";
        st.value = isa;
        st.recognized = parse_isa(st.value, cap);
    } else {
        const char* off = std::getenv("CSCORE_DISABLE_AVX2");  // deprecated alias
        if (off != nullptr && off[0] != '\0' && !(off[0] == '0' && off[1] == '\0')) {
            st.variable = "CSCORE_DISABLE_AVX2";
            st.value = off;
            cap = Isa::generic;
        }
    }
    st.active = cap < st.supported ? cap : st.supported;
    return st;
}

}  // namespace detail

// The setting, read once per process (thread-safe initialization).
inline const IsaSetting& isa_setting() {
    static const IsaSetting st = detail::read_isa_setting();
    return st;
}

// The level the kernels use.
inline Isa active_isa() { return isa_setting().active; }

// True when kernels may use code for `level` (and below).
inline bool isa_at_least(Isa level) { return active_isa() >= level; }

}  // namespace cscore::cpu
