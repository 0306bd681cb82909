#include "dlsched/policy/rank_order.h"

#include <algorithm>

namespace dlsched {

const RankOrder& RankOrder::Fifo() {
  static const RankOrder* const kFifo = new RankOrder();
  return *kFifo;
}

Timestamp RankOrder::VictimFrom(const JobView& running) const {
  if (preempt_.empty()) return kTimeNever;
  Timestamp from = kTimeZero;
  for (const PreemptPlugin* plugin : preempt_) from = std::max(from, plugin->VictimFrom(running));
  return from;
}

}  // namespace dlsched
