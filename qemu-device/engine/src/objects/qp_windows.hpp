// SPDX-License-Identifier: GPL-2.0-or-later
// What the QP table asks of the owner of the keys (keys.hpp) when a QP goes.
#pragma once

namespace ohca {

struct Qp;

// Memory windows bound through a QP (type 2) are unbound when it goes: the
// owner of the keys does it.
class QpWindows {
  public:
    QpWindows() = default;
    QpWindows(const QpWindows &) = delete;
    QpWindows &operator=(const QpWindows &) = delete;
    virtual void unbind_qp_windows(const Qp &qp) = 0;

  protected:
    ~QpWindows() = default;
};

} // namespace ohca
