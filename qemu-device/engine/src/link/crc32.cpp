// SPDX-License-Identifier: GPL-2.0-or-later
#include "link/crc32.hpp"

#include <array>
#include <bit>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define OHCA_CRC_PCLMUL 1
#include <immintrin.h>
#endif

namespace ohca::crc32 {

namespace {

constexpr uint32_t kPolyReflected = 0xedb88320u; // 0x04c11db7, bits reversed

// kTable[0] is the byte-at-a-time table; kTable[k][b] is the register after
// byte b is followed by k zero bytes, so eight bytes fold in one step.
struct Tables {
    std::array<std::array<uint32_t, 256>, 8> t{};
    constexpr Tables() {
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) {
                c = (c & 1) != 0 ? kPolyReflected ^ (c >> 1) : c >> 1;
            }
            t[0][i] = c;
        }
        for (size_t k = 1; k < 8; ++k) {
            for (uint32_t i = 0; i < 256; ++i) {
                t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
            }
        }
    }
};
constexpr Tables kTables;

uint32_t bytewise(uint32_t crc, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        crc = kTables.t[0][(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    }
    return crc;
}

uint32_t load_le32(const uint8_t *p) {
    uint32_t v = 0;
    std::memcpy(&v, p, sizeof(v));
    if constexpr (std::endian::native == std::endian::big) {
        v = __builtin_bswap32(v);
    }
    return v;
}

uint32_t slice8(uint32_t crc, const uint8_t *p, size_t n) {
    const auto &t = kTables.t;
    for (; n >= 8; p += 8, n -= 8) {
        const uint32_t a = load_le32(p) ^ crc;
        const uint32_t b = load_le32(p + 4);
        crc = t[7][a & 0xff] ^ t[6][(a >> 8) & 0xff] ^ t[5][(a >> 16) & 0xff] ^ t[4][a >> 24] ^
              t[3][b & 0xff] ^ t[2][(b >> 8) & 0xff] ^ t[1][(b >> 16) & 0xff] ^ t[0][b >> 24];
    }
    return bytewise(crc, p, n);
}

#ifdef OHCA_CRC_PCLMUL

// Folding constants, computed rather than transcribed: to move a 64-bit
// half of the (reflected) register n bits further along the message,
// multiply it by x^n mod P, bit-reflected and shifted by one (the product
// of two reflected operands comes out one bit low).
constexpr uint64_t fold_constant(unsigned int n) {
    constexpr uint64_t kPoly = 0x104c11db7ull;
    uint64_t r = 1;
    for (unsigned int i = 0; i < n; ++i) {
        r <<= 1;
        if ((r >> 32) & 1) {
            r ^= kPoly;
        }
    }
    uint64_t refl = 0;
    for (int b = 0; b < 32; ++b) {
        refl |= ((r >> b) & 1) << (31 - b);
    }
    return refl << 1;
}
// Folding 4 x 128 bits (64 bytes) at a time, then 128 bits at a time.
constexpr uint64_t kFold512Lo = fold_constant(4 * 128 + 32);
constexpr uint64_t kFold512Hi = fold_constant(4 * 128 - 32);
constexpr uint64_t kFold128Lo = fold_constant(128 + 32);
constexpr uint64_t kFold128Hi = fold_constant(128 - 32);
static_assert(kFold128Hi == 0x0ccaa009eull, "CRC-32 fold constant");

__attribute__((target("pclmul,sse2"))) inline __m128i fold(__m128i x, __m128i k, __m128i next) {
    const __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
    const __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

__attribute__((target("pclmul,sse2"))) uint32_t pclmul(uint32_t crc, const uint8_t *p, size_t n) {
    if (n < 64) {
        return slice8(crc, p, n);
    }
    auto load = [](const uint8_t *q) {
        return _mm_loadu_si128(reinterpret_cast<const __m128i *>(q));
    };
    // The register enters as the first four message bytes XORed with it;
    // what the folds leave is a 16-byte message with the same remainder.
    __m128i x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(static_cast<int>(crc)));
    __m128i x1 = load(p + 16);
    __m128i x2 = load(p + 32);
    __m128i x3 = load(p + 48);
    p += 64;
    n -= 64;
    const __m128i k512 =
        _mm_set_epi64x(static_cast<long long>(kFold512Hi), static_cast<long long>(kFold512Lo));
    for (; n >= 64; p += 64, n -= 64) {
        x0 = fold(x0, k512, load(p));
        x1 = fold(x1, k512, load(p + 16));
        x2 = fold(x2, k512, load(p + 32));
        x3 = fold(x3, k512, load(p + 48));
    }
    const __m128i k128 =
        _mm_set_epi64x(static_cast<long long>(kFold128Hi), static_cast<long long>(kFold128Lo));
    x0 = fold(x0, k128, x1);
    x0 = fold(x0, k128, x2);
    x0 = fold(x0, k128, x3);
    for (; n >= 16; p += 16, n -= 16) {
        x0 = fold(x0, k128, load(p));
    }
    // The last 128 bits and the tail by table: 16 + < 16 bytes, small next
    // to the folded part and free of the Barrett reduction's subtleties.
    alignas(16) uint8_t rest[16];
    _mm_store_si128(reinterpret_cast<__m128i *>(rest), x0);
    return slice8(slice8(0, rest, sizeof(rest)), p, n);
}

#endif

using Impl = uint32_t (*)(uint32_t, const uint8_t *, size_t);

Impl choose() {
#ifdef OHCA_CRC_PCLMUL
    if (pclmul_supported()) {
        return pclmul;
    }
#endif
    return slice8;
}

// Chosen at first use (not by a static initializer, whose order against
// other translation units' initializers is unspecified).
Impl impl() {
    static const Impl chosen = choose();
    return chosen;
}

} // namespace

uint32_t update_bitwise(uint32_t crc, std::span<const uint8_t> data) {
    for (uint8_t b : data) {
        crc ^= b;
        for (int k = 0; k < 8; ++k) {
            crc = (crc & 1) != 0 ? kPolyReflected ^ (crc >> 1) : crc >> 1;
        }
    }
    return crc;
}

uint32_t update_slice8(uint32_t crc, std::span<const uint8_t> data) {
    return slice8(crc, data.data(), data.size());
}

bool pclmul_supported() {
#ifdef OHCA_CRC_PCLMUL
    __builtin_cpu_init();
    return __builtin_cpu_supports("pclmul") != 0;
#else
    return false;
#endif
}

uint32_t update_pclmul(uint32_t crc, std::span<const uint8_t> data) {
#ifdef OHCA_CRC_PCLMUL
    return pclmul(crc, data.data(), data.size());
#else
    return slice8(crc, data.data(), data.size());
#endif
}

uint32_t update(uint32_t crc, std::span<const uint8_t> data) {
    return impl()(crc, data.data(), data.size());
}

const char *implementation() {
    return impl() == slice8 ? "slice8" : "pclmul";
}

} // namespace ohca::crc32
