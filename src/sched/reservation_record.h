// Conversion between the scheduler's Reservation and its wire/journal form, ReservationRecord.
// Shared by the controller (journal, snapshot, query answers) and the commands (scontrol show
// reservation, sinfo -T), so both sides read a record the same way.
#pragma once

#include <functional>
#include <string>

#include "sched/reservation.h"
#include "shoal.pb.h"

namespace shoal::sched {

// Flags travel as stable names ("MAINT", "STATIC_ALLOC", "PURGE_COMP", ...), never as the
// ResvFlag bit values, so reordering that enum cannot change what an old journal means.
pb::ReservationRecord ToRecord(const Reservation& r);

// `node_index` maps a node name to its index (-1: unknown, dropped from the reservation); when
// empty, node_indexes are left empty and only node_names are filled (enough for the formats).
Reservation FromRecord(const pb::ReservationRecord& rec,
                       const std::function<int(const std::string&)>& node_index = nullptr);

}  // namespace shoal::sched
