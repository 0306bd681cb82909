#pragma once

namespace dlsched {

// Builds a visitor from lambdas for std::visit: std::visit(Overloaded{[](A) {}, [](B) {}}, v).
template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace dlsched
