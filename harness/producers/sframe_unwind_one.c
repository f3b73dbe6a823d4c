// SPDX-License-Identifier: GPL-2.0
/*
 * sframe_unwind_test as one translation unit, for clang-22 + ld.lld-22:
 * ld.lld cannot merge several .sframe input sections, so the test and its
 * helpers must come from a single object (build.sh).
 */
#include "sframe_unwind_test.c"
#include "unwind_user_test.c"
