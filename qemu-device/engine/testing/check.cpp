// SPDX-License-Identifier: GPL-2.0-or-later
#include "check.hpp"

#include <cstdio>
#include <cstdlib>

namespace ohca::test {

namespace {
FailureHandler g_handler = nullptr;
} // namespace

FailureHandler set_failure_handler(FailureHandler h) {
    FailureHandler old = g_handler;
    g_handler = h;
    return old;
}

void report_failure(const char *file, int line, const std::string &what) {
    if (g_handler != nullptr) {
        g_handler(file, line, what);
        return;
    }
    std::fprintf(stderr, "%s:%d: ohca test driver: %s\n", file, line, what.c_str());
    std::abort();
}

} // namespace ohca::test
