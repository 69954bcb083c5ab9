// SPDX-License-Identifier: GPL-2.0-or-later
// How the shared test driver reports a failed check. The driver is used by
// the GoogleTest suite, the libFuzzer fuzzers and the benchmark, so it does
// not use GoogleTest itself: a failed check goes to the installed handler
// (the unit tests install one that adds a GoogleTest failure at the
// check's file and line); without one it prints the failure and aborts,
// which is what a fuzzer (a crash) and the benchmark (a failed run) want.
#pragma once

#include <string>

namespace ohca::test {

using FailureHandler = void (*)(const char *file, int line, const std::string &what);

// Returns the previous handler (null: print and abort).
FailureHandler set_failure_handler(FailureHandler h);
void report_failure(const char *file, int line, const std::string &what);

// Checks that 'cond' holds; otherwise reports 'what' (a std::string
// expression) and evaluates to false, so a helper can also return early.
#define OHCA_CHECK(cond, what)                                                                     \
    ((cond) ? true : (::ohca::test::report_failure(__FILE__, __LINE__, (what)), false))

// Checks a command's status against the one expected.
#define OHCA_CHECK_STATUS(status, want, what)                                                      \
    OHCA_CHECK((status) == (want), std::string(what) + ": status " +                               \
                                       std::to_string(unsigned{status}) + ", expected " +          \
                                       std::to_string(unsigned{want}))

} // namespace ohca::test
