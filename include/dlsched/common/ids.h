#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>

namespace dlsched {

// A typed integer id: JobId and NodeId do not mix. Ids are dense and assigned by their owner
// (JobTable, Cluster), so they double as vector indexes via index().
template <typename Tag>
class StrongId {
 public:
  constexpr StrongId() = default;
  constexpr explicit StrongId(uint32_t value) : value_(value) {}
  constexpr uint32_t value() const { return value_; }
  constexpr size_t index() const { return value_; }
  constexpr bool valid() const { return value_ != kInvalid; }
  friend constexpr auto operator<=>(StrongId, StrongId) = default;
  friend std::ostream& operator<<(std::ostream& os, StrongId id) { return os << id.value_; }

 private:
  static constexpr uint32_t kInvalid = UINT32_MAX;
  uint32_t value_ = kInvalid;
};

using JobId = StrongId<struct JobIdTag>;
using NodeId = StrongId<struct NodeIdTag>;
using RackId = StrongId<struct RackIdTag>;
// Index into the cluster's table of GPU type names ("V100", "A100", ...).
using GpuTypeId = StrongId<struct GpuTypeIdTag>;
// A class of interchangeable nodes: same GPU type and same labels (Cluster::node_label_class).
using LabelClassId = StrongId<struct LabelClassIdTag>;

}  // namespace dlsched

template <typename Tag>
struct std::hash<dlsched::StrongId<Tag>> {
  size_t operator()(dlsched::StrongId<Tag> id) const noexcept { return id.value(); }
};
