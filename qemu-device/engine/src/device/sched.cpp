// SPDX-License-Identifier: GPL-2.0-or-later
#include "device/sched.hpp"

#include "objects/rdma_objects.hpp"

namespace ohca {

void ReadyList::push(Qp &qp) {
    SchedHook &h = qp.sched;
    if (h.ready) {
        return;
    }
    h.ready = true;
    h.next = nullptr;
    h.prev = tail_;
    if (tail_ != nullptr) {
        tail_->sched.next = &qp;
    } else {
        head_ = &qp;
    }
    tail_ = &qp;
    ++size_;
}

Qp *ReadyList::pop() {
    Qp *qp = head_;
    if (qp != nullptr) {
        remove(*qp);
    }
    return qp;
}

void ReadyList::remove(Qp &qp) {
    SchedHook &h = qp.sched;
    if (!h.ready) {
        return;
    }
    (h.prev != nullptr ? h.prev->sched.next : head_) = h.next;
    (h.next != nullptr ? h.next->sched.prev : tail_) = h.prev;
    h.prev = nullptr;
    h.next = nullptr;
    h.ready = false;
    --size_;
}

void ReadyList::clear() {
    head_ = nullptr;
    tail_ = nullptr;
    size_ = 0;
}

HeapHook &heap_hook(Qp &qp) {
    return qp.sched.timer;
}

HeapHook &heap_hook(Cq &cq) {
    return cq.timer;
}

template <class T> void TimerHeap<T>::clear() {
    heap_.clear(); // keeps the reserved storage
}

template <class T> void TimerHeap<T>::place(size_t pos, T *obj) {
    heap_[pos] = obj;
    heap_hook(*obj).pos = static_cast<uint32_t>(pos);
}

template <class T> void TimerHeap<T>::sift_up(size_t pos) {
    T *obj = heap_[pos];
    while (pos > 0) {
        const size_t parent = (pos - 1) / 2;
        if (heap_[parent]->deadline_ns <= obj->deadline_ns) {
            break;
        }
        place(pos, heap_[parent]);
        pos = parent;
    }
    place(pos, obj);
}

template <class T> void TimerHeap<T>::sift_down(size_t pos) {
    T *obj = heap_[pos];
    const size_t n = heap_.size();
    for (;;) {
        size_t child = 2 * pos + 1;
        if (child >= n) {
            break;
        }
        if (child + 1 < n && heap_[child + 1]->deadline_ns < heap_[child]->deadline_ns) {
            ++child;
        }
        if (obj->deadline_ns <= heap_[child]->deadline_ns) {
            break;
        }
        place(pos, heap_[child]);
        pos = child;
    }
    place(pos, obj);
}

template <class T> void TimerHeap<T>::erase(size_t pos) {
    T *gone = heap_[pos];
    T *last = heap_.back();
    heap_.pop_back();
    heap_hook(*gone).pos = HeapHook::kNotInHeap;
    if (last != gone) {
        place(pos, last);
        sift_up(pos);
        sift_down(heap_hook(*last).pos);
    }
}

template <class T> void TimerHeap<T>::set(T &obj, uint64_t deadline_ns) {
    const uint32_t pos = heap_hook(obj).pos;
    obj.deadline_ns = deadline_ns;
    if (pos == HeapHook::kNotInHeap) {
        if (deadline_ns != 0) {
            heap_.push_back(&obj); // within the reserved capacity: one per object
            sift_up(heap_.size() - 1);
        }
        return;
    }
    if (deadline_ns == 0) {
        erase(pos);
        return;
    }
    sift_up(pos);
    sift_down(heap_hook(obj).pos);
}

template class TimerHeap<Qp>;
template class TimerHeap<Cq>;
template class TimerHeap<PaceSlot>;

} // namespace ohca
