// SPDX-License-Identifier: GPL-2.0-or-later
// A double-ended queue on a power-of-two ring that holds no storage until
// its first element (std::deque allocates about 600 bytes when created,
// which every idle QP would pay) and keeps it while in use.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace ohca {

template <class T> class Ring {
  public:
    [[nodiscard]] size_t size() const { return count_; }
    [[nodiscard]] bool empty() const { return count_ == 0; }
    T &operator[](size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }
    const T &operator[](size_t i) const { return slots_[(head_ + i) & (slots_.size() - 1)]; }
    T &front() { return (*this)[0]; }
    T &back() { return (*this)[count_ - 1]; }
    [[nodiscard]] const T &back() const { return (*this)[count_ - 1]; }

    void push_back(const T &v) {
        if (count_ == slots_.size()) {
            grow();
        }
        (*this)[count_++] = v;
    }
    void pop_front() {
        head_ = (head_ + 1) & (slots_.size() - 1);
        --count_;
    }
    void pop_back() { --count_; }
    void clear() {
        head_ = 0;
        count_ = 0;
    }

  private:
    void grow() {
        std::vector<T> n(slots_.empty() ? 4 : slots_.size() * 2);
        for (size_t i = 0; i < count_; ++i) {
            n[i] = std::move((*this)[i]);
        }
        slots_ = std::move(n);
        head_ = 0;
    }
    std::vector<T> slots_; // a power of two in size, or empty
    size_t head_ = 0;
    size_t count_ = 0;
};

} // namespace ohca
