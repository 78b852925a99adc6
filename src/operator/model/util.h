// Small pure helpers shared by the planners: metadata, owner references, hashes, durations,
// times and pod accessors. No I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "operator/model/plan.h"

namespace shoal::op {

inline constexpr const char* kGroupVersion = "shoal.dev/v1alpha1";
inline constexpr const char* kManagedBy = "shoal-operator";

// Well-known labels and annotations (design.md).
inline constexpr const char* kLabelName = "app.kubernetes.io/name";
inline constexpr const char* kLabelInstance = "app.kubernetes.io/instance";
inline constexpr const char* kLabelManagedBy = "app.kubernetes.io/managed-by";
inline constexpr const char* kLabelNodeSet = "shoal.dev/nodeset";
inline constexpr const char* kLabelProtect = "nodeset.shoal.dev/pod-protect";
inline constexpr const char* kLabelRevision = "nodeset.shoal.dev/revision";
inline constexpr const char* kAnnotCordon = "nodeset.shoal.dev/pod-cordon";
inline constexpr const char* kAnnotDeadline = "nodeset.shoal.dev/pod-deadline";
inline constexpr const char* kAnnotNodeDrain = "nodeset.shoal.dev/node-drain";
inline constexpr const char* kAnnotDeletionCost = "controller.kubernetes.io/pod-deletion-cost";
inline constexpr const char* kAnnotNodeDrainReason = "nodeset.shoal.dev/drain-reason";
inline constexpr const char* kAnnotFeatures = "features.shoal.dev/spec";
inline constexpr const char* kAnnotConfigHash = "shoal.dev/config-hash";

// Field access that never throws: `path` is a '.'-separated list of object keys.
const Json* Find(const Json& j, std::string_view path);
std::string Str(const Json& j, std::string_view path, std::string_view def = "");
int64_t Int(const Json& j, std::string_view path, int64_t def);
bool Bool(const Json& j, std::string_view path, bool def);

// Labels every object of a CR carries: name (component), instance (the CR name), managed-by.
Json BaseLabels(std::string_view component, std::string_view instance);
// ownerReferences entry pointing at the CR (controller and blockOwnerDeletion true).
Json OwnerRef(const Json& cr);
// metadata {name, namespace, labels, ownerReferences} of an object owned by `cr`.
Json OwnedMeta(const Json& cr, std::string_view name, const Json& labels);
// Sets annotation kSpecHashAnnotation to the hash of the object without it.
void StampSpecHash(Json* object);

// FNV-1a 64-bit, lower-case hex (16 chars); short (10 chars) for names and labels.
std::string HashHex(std::string_view data);
std::string ShortHash(std::string_view data);

// "90", "90s", "15m", "2h", "1d", "1h30m" -> seconds. Errors name the text.
Result<int64_t> ParseDuration(std::string_view text);
// RFC 3339 in UTC ("2026-01-02T03:04:05Z") and back (accepts Z or +hh:mm offsets).
std::string FormatRfc3339(int64_t unix_s);
std::optional<int64_t> ParseRfc3339(std::string_view text);
// The same in microseconds, for Kubernetes MicroTime ("2026-01-02T03:04:05.123456Z").
std::optional<int64_t> ParseRfc3339Micros(std::string_view text);

// Standard base64 (Secret data) decode/encode.
std::optional<std::string> Base64Decode(std::string_view text);
std::string Base64Encode(std::string_view data);

// Pod accessors.
std::string PodName(const Json& pod);
std::string PodPhase(const Json& pod);
bool PodReady(const Json& pod);
bool PodTerminating(const Json& pod);      // metadata.deletionTimestamp set
int64_t PodDeletionTime(const Json& pod);  // deletionTimestamp as unix s, 0 when unset
int64_t PodReadySince(const Json& pod);    // Ready condition lastTransitionTime, 0 = unknown
std::string PodNodeName(const Json& pod);  // spec.nodeName
std::string PodLabel(const Json& pod, const std::string& key);
std::string PodAnnotation(const Json& pod, const std::string& key);
std::optional<int> OrdinalOf(std::string_view pod_name, std::string_view prefix);  // "w-3" -> 3

}  // namespace shoal::op
