// SPDX-License-Identifier: GPL-2.0-or-later
// Golden texts: a counters' JSON compared whole, byte for byte, with
// switch/tests/golden/<name>.json, which pins the names, their order, the
// separators and the numbers' formatting that the benches and the VM
// tests parse. OHCA_GOLDEN_RECORD=1 writes the file instead (from the
// code whose output is the reference) and fails the test, so a recording
// run never passes by accident.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace ohca::fabric::test {

inline void expect_golden(const std::string &name, const std::string &text) {
    const std::string path = std::string(OHCA_SWITCH_GOLDEN_DIR) + "/" + name + ".json";
    if (const char *rec = std::getenv("OHCA_GOLDEN_RECORD"); rec != nullptr && *rec == '1') {
        std::ofstream(path) << text << '\n';
        FAIL() << "recorded " << path;
    }
    std::ifstream in(path);
    ASSERT_TRUE(in) << "no golden text " << path;
    std::stringstream want;
    want << in.rdbuf();
    EXPECT_EQ(text + '\n', want.str()) << path;
}

} // namespace ohca::fabric::test
