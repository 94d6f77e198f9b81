#pragma once
// Hot row loops compiled for AVX-512 and AVX2 as well as plain x86-64, the
// best picked at load time (GCC function multiversioning). Use only on
// functions whose results do not depend on the instruction set: with
// -ffp-contract=off no clone fuses a multiply-add.
//
// Not under ThreadSanitizer: GCC 12 instruments the generated ifunc resolver
// (__tsan_func_entry), which the dynamic loader runs while relocating, before
// TSan's runtime exists, so every program crashed at load. The race checks
// see the same code in the plain clone.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define TW_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TW_CLONES
#endif
