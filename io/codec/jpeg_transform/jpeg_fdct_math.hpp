#pragma once
// The forward half of a JPEG tile encode with libjpeg-turbo's arithmetic, for
// the host and the device alike: RGB -> YCbCr (jccolor.c's fixed-point
// tables), 2x2 chroma averaging with alternating bias (jcsample.c), the
// accurate integer FDCT (jfdctint.c, 16-bit workspace as in SIMD builds) and
// quantisation by reciprocal (jcdctmgr.c). libjpeg-turbo's SIMD code gives
// the same coefficients as its C code, and so does this: entropy-coding the
// result (JpegEncoder::encode_coefficients) reproduces the CPU encoder's
// bytes exactly.
#include <cstdint>

#include "engine/ops/hd.hpp"

namespace tw::jfdct {

// jccolor.c: FIX(x) = (long)(x * 65536 + 0.5); Cb/Cr round with 0.5 - epsilon.
TW_HD void rgb_to_ycc(int r, int g, int b, int& y, int& cb, int& cr) {
  constexpr long long kHalf = 1LL << 15, kOffset = 128LL << 16;
  y = static_cast<int>((19595LL * r + 38470LL * g + 7471LL * b + kHalf) >> 16);
  cb = static_cast<int>((-11059LL * r + -21709LL * g + 32768LL * b + kOffset + kHalf - 1) >> 16);
  cr = static_cast<int>((32768LL * r + -27439LL * g + -5329LL * b + kOffset + kHalf - 1) >> 16);
}

// jcsample.c's h2v2_downsample: bias 1 at even output columns, 2 at odd.
TW_HD int average4(int a, int b, int c, int d, int out_col) {
  return (a + b + c + d + 1 + (out_col & 1)) >> 2;
}

TW_HD long long descale(long long x, int n) {
  return (x + (1LL << (n - 1))) >> n;
}

// jfdctint.c's jpeg_fdct_islow on one row (stride 1) or column (stride 8)
// of a 16-bit workspace. pass 1 leaves results scaled by 2^PASS1_BITS, pass
// 2 removes that and leaves the usual factor of 8.
TW_HD void fdct_1d(int16_t* d, int s, bool pass1) {
  constexpr int kConst = 13, kPass1 = 2;
  const long long tmp0 = d[0] + d[7 * s], tmp7 = d[0] - d[7 * s];
  const long long tmp1 = d[s] + d[6 * s], tmp6 = d[s] - d[6 * s];
  const long long tmp2 = d[2 * s] + d[5 * s], tmp5 = d[2 * s] - d[5 * s];
  const long long tmp3 = d[3 * s] + d[4 * s], tmp4 = d[3 * s] - d[4 * s];
  const long long tmp10 = tmp0 + tmp3, tmp13 = tmp0 - tmp3, tmp11 = tmp1 + tmp2, tmp12 = tmp1 - tmp2;
  const int even = pass1 ? 0 : kPass1, odd = pass1 ? kConst - kPass1 : kConst + kPass1;
  if (pass1) {
    d[0] = static_cast<int16_t>((tmp10 + tmp11) * (1 << kPass1));
    d[4 * s] = static_cast<int16_t>((tmp10 - tmp11) * (1 << kPass1));
  } else {
    d[0] = static_cast<int16_t>(descale(tmp10 + tmp11, even));
    d[4 * s] = static_cast<int16_t>(descale(tmp10 - tmp11, even));
  }
  long long z1 = (tmp12 + tmp13) * 4433;
  d[2 * s] = static_cast<int16_t>(descale(z1 + tmp13 * 6270, odd));
  d[6 * s] = static_cast<int16_t>(descale(z1 + tmp12 * -15137, odd));
  z1 = tmp4 + tmp7;
  long long z2 = tmp5 + tmp6, z3 = tmp4 + tmp6, z4 = tmp5 + tmp7;
  const long long z5 = (z3 + z4) * 9633;
  const long long t4 = tmp4 * 2446, t5 = tmp5 * 16819, t6 = tmp6 * 25172, t7 = tmp7 * 12299;
  z1 *= -7373;
  z2 *= -20995;
  z3 = z3 * -16069 + z5;
  z4 = z4 * -3196 + z5;
  d[7 * s] = static_cast<int16_t>(descale(t4 + z1 + z3, odd));
  d[5 * s] = static_cast<int16_t>(descale(t5 + z2 + z4, odd));
  d[3 * s] = static_cast<int16_t>(descale(t6 + z2 + z3, odd));
  d[s] = static_cast<int16_t>(descale(t7 + z1 + z4, odd));
}

// In place: samples minus 128 in, scaled DCT coefficients out.
TW_HD void fdct_islow(int16_t d[64]) {
  for (int r = 0; r < 8; ++r) fdct_1d(d + 8 * r, 1, true);
  for (int c = 0; c < 8; ++c) fdct_1d(d + c, 8, false);
}

// jcdctmgr.c's compute_reciprocal for divisor = quantval << 3.
struct Divisor {
  uint32_t recip = 1, corr = 0;
  int shift = 0;  // total right shift of the product
};

TW_HD Divisor divisor_for(uint16_t quantval) {
  const uint32_t div = static_cast<uint32_t>(quantval) << 3;
  Divisor d;
  if (div == 1) {
    d.recip = 1, d.corr = 0, d.shift = 0;
    return d;
  }
  int b = 0;
  while ((div >> (b + 1)) != 0) ++b;  // floor(log2(div))
  int r = 16 + b;
  uint32_t fq = static_cast<uint32_t>((1ULL << r) / div);
  const uint32_t fr = static_cast<uint32_t>((1ULL << r) % div);
  uint32_t c = div / 2;
  if (fr == 0) {
    fq >>= 1;
    --r;
  } else if (fr <= div / 2) {
    ++c;
  } else {
    ++fq;
  }
  d.recip = fq & 0xffff, d.corr = c & 0xffff, d.shift = r;
  return d;
}

TW_HD int16_t quantize(int16_t v, const Divisor& d) {
  const bool neg = v < 0;
  const uint32_t a = static_cast<uint32_t>(neg ? -static_cast<int>(v) : v);
  const uint32_t q = static_cast<uint32_t>(static_cast<uint16_t>((a + d.corr) * d.recip >> d.shift));
  const int16_t t = static_cast<int16_t>(q);
  return neg ? static_cast<int16_t>(-t) : t;
}

}  // namespace tw::jfdct
