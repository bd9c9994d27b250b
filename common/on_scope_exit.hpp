#pragma once
// Runs a function when the scope ends, however it ends: for an undo that must happen in
// declaration order with the objects around it (a hook cleared before what it calls goes).
#include <utility>

namespace sandgate {

template <class Undo>
class OnScopeExit {
 public:
  explicit OnScopeExit(Undo undo) : undo_(std::move(undo)) {}
  ~OnScopeExit() { undo_(); }
  OnScopeExit(const OnScopeExit&) = delete;
  OnScopeExit& operator=(const OnScopeExit&) = delete;

 private:
  Undo undo_;
};

}  // namespace sandgate
