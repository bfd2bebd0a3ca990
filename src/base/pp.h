// Preprocessor helpers for the call list (base/coll_list.h): GCOLL_PP_MAP(F, a, b, ...)
// expands to F a, F b, ... (each argument a parenthesized tuple, so `F a` is a call of
// F), comma-separated; GCOLL_PP_EACH(F, a, b, ...) to F a F b ... (no separator: for
// statements); up to 10 arguments.
#pragma once

#define GCOLL_PP_CAT(a, b) GCOLL_PP_CAT_(a, b)
#define GCOLL_PP_CAT_(a, b) a##b
#define GCOLL_PP_NARGS(...) GCOLL_PP_NARGS_(__VA_ARGS__, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define GCOLL_PP_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, N, ...) N
#define GCOLL_PP_MAP(F, ...) GCOLL_PP_CAT(GCOLL_PP_MAP_, GCOLL_PP_NARGS(__VA_ARGS__))(F, __VA_ARGS__)
#define GCOLL_PP_MAP_1(F, a) F a
#define GCOLL_PP_MAP_2(F, a, ...) F a, GCOLL_PP_MAP_1(F, __VA_ARGS__)
#define GCOLL_PP_MAP_3(F, a, ...) F a, GCOLL_PP_MAP_2(F, __VA_ARGS__)
#define GCOLL_PP_MAP_4(F, a, ...) F a, GCOLL_PP_MAP_3(F, __VA_ARGS__)
#define GCOLL_PP_MAP_5(F, a, ...) F a, GCOLL_PP_MAP_4(F, __VA_ARGS__)
#define GCOLL_PP_MAP_6(F, a, ...) F a, GCOLL_PP_MAP_5(F, __VA_ARGS__)
#define GCOLL_PP_MAP_7(F, a, ...) F a, GCOLL_PP_MAP_6(F, __VA_ARGS__)
#define GCOLL_PP_MAP_8(F, a, ...) F a, GCOLL_PP_MAP_7(F, __VA_ARGS__)
#define GCOLL_PP_MAP_9(F, a, ...) F a, GCOLL_PP_MAP_8(F, __VA_ARGS__)
#define GCOLL_PP_MAP_10(F, a, ...) F a, GCOLL_PP_MAP_9(F, __VA_ARGS__)
#define GCOLL_PP_EACH(F, ...) GCOLL_PP_CAT(GCOLL_PP_EACH_, GCOLL_PP_NARGS(__VA_ARGS__))(F, __VA_ARGS__)
#define GCOLL_PP_EACH_1(F, a) F a
#define GCOLL_PP_EACH_2(F, a, ...) F a GCOLL_PP_EACH_1(F, __VA_ARGS__)
#define GCOLL_PP_EACH_3(F, a, ...) F a GCOLL_PP_EACH_2(F, __VA_ARGS__)
#define GCOLL_PP_EACH_4(F, a, ...) F a GCOLL_PP_EACH_3(F, __VA_ARGS__)
#define GCOLL_PP_EACH_5(F, a, ...) F a GCOLL_PP_EACH_4(F, __VA_ARGS__)
#define GCOLL_PP_EACH_6(F, a, ...) F a GCOLL_PP_EACH_5(F, __VA_ARGS__)
#define GCOLL_PP_EACH_7(F, a, ...) F a GCOLL_PP_EACH_6(F, __VA_ARGS__)
#define GCOLL_PP_EACH_8(F, a, ...) F a GCOLL_PP_EACH_7(F, __VA_ARGS__)
#define GCOLL_PP_EACH_9(F, a, ...) F a GCOLL_PP_EACH_8(F, __VA_ARGS__)
#define GCOLL_PP_EACH_10(F, a, ...) F a GCOLL_PP_EACH_9(F, __VA_ARGS__)
