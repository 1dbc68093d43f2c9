// Preprocessor helpers for hook_list.def: count a parenthesized argument list and
// turn (a, b, c) into "&a, &b, &c". Written out up to 32 arguments (the widest hooked
// function, cudnnBatchNormalizationBackwardEx, has 30).
#pragma once

#define PUMP_PP_NARGS(...)                                                                                            \
  PUMP_PP_NARGS_IMPL(__VA_ARGS__, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, \
                     11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define PUMP_PP_NARGS_IMPL(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, \
                           _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32, N, ...)                        \
  N
#define PUMP_PP_CAT(a, b) PUMP_PP_CAT_IMPL(a, b)
#define PUMP_PP_CAT_IMPL(a, b) a##b
#define PUMP_PP_ADDRESSES(...) PUMP_PP_CAT(PUMP_PP_ADDR_, PUMP_PP_NARGS(__VA_ARGS__))(__VA_ARGS__)
#define PUMP_PP_ADDR_1(x) &x
#define PUMP_PP_ADDR_2(x, ...) &x, PUMP_PP_ADDR_1(__VA_ARGS__)
#define PUMP_PP_ADDR_3(x, ...) &x, PUMP_PP_ADDR_2(__VA_ARGS__)
#define PUMP_PP_ADDR_4(x, ...) &x, PUMP_PP_ADDR_3(__VA_ARGS__)
#define PUMP_PP_ADDR_5(x, ...) &x, PUMP_PP_ADDR_4(__VA_ARGS__)
#define PUMP_PP_ADDR_6(x, ...) &x, PUMP_PP_ADDR_5(__VA_ARGS__)
#define PUMP_PP_ADDR_7(x, ...) &x, PUMP_PP_ADDR_6(__VA_ARGS__)
#define PUMP_PP_ADDR_8(x, ...) &x, PUMP_PP_ADDR_7(__VA_ARGS__)
#define PUMP_PP_ADDR_9(x, ...) &x, PUMP_PP_ADDR_8(__VA_ARGS__)
#define PUMP_PP_ADDR_10(x, ...) &x, PUMP_PP_ADDR_9(__VA_ARGS__)
#define PUMP_PP_ADDR_11(x, ...) &x, PUMP_PP_ADDR_10(__VA_ARGS__)
#define PUMP_PP_ADDR_12(x, ...) &x, PUMP_PP_ADDR_11(__VA_ARGS__)
#define PUMP_PP_ADDR_13(x, ...) &x, PUMP_PP_ADDR_12(__VA_ARGS__)
#define PUMP_PP_ADDR_14(x, ...) &x, PUMP_PP_ADDR_13(__VA_ARGS__)
#define PUMP_PP_ADDR_15(x, ...) &x, PUMP_PP_ADDR_14(__VA_ARGS__)
#define PUMP_PP_ADDR_16(x, ...) &x, PUMP_PP_ADDR_15(__VA_ARGS__)
#define PUMP_PP_ADDR_17(x, ...) &x, PUMP_PP_ADDR_16(__VA_ARGS__)
#define PUMP_PP_ADDR_18(x, ...) &x, PUMP_PP_ADDR_17(__VA_ARGS__)
#define PUMP_PP_ADDR_19(x, ...) &x, PUMP_PP_ADDR_18(__VA_ARGS__)
#define PUMP_PP_ADDR_20(x, ...) &x, PUMP_PP_ADDR_19(__VA_ARGS__)
#define PUMP_PP_ADDR_21(x, ...) &x, PUMP_PP_ADDR_20(__VA_ARGS__)
#define PUMP_PP_ADDR_22(x, ...) &x, PUMP_PP_ADDR_21(__VA_ARGS__)
#define PUMP_PP_ADDR_23(x, ...) &x, PUMP_PP_ADDR_22(__VA_ARGS__)
#define PUMP_PP_ADDR_24(x, ...) &x, PUMP_PP_ADDR_23(__VA_ARGS__)
#define PUMP_PP_ADDR_25(x, ...) &x, PUMP_PP_ADDR_24(__VA_ARGS__)
#define PUMP_PP_ADDR_26(x, ...) &x, PUMP_PP_ADDR_25(__VA_ARGS__)
#define PUMP_PP_ADDR_27(x, ...) &x, PUMP_PP_ADDR_26(__VA_ARGS__)
#define PUMP_PP_ADDR_28(x, ...) &x, PUMP_PP_ADDR_27(__VA_ARGS__)
#define PUMP_PP_ADDR_29(x, ...) &x, PUMP_PP_ADDR_28(__VA_ARGS__)
#define PUMP_PP_ADDR_30(x, ...) &x, PUMP_PP_ADDR_29(__VA_ARGS__)
#define PUMP_PP_ADDR_31(x, ...) &x, PUMP_PP_ADDR_30(__VA_ARGS__)
#define PUMP_PP_ADDR_32(x, ...) &x, PUMP_PP_ADDR_31(__VA_ARGS__)
