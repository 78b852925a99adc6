// slurm.conf from a Controller (+ its NodeSets and Accounting), slurmdbd.conf from an
// Accounting, and the in-pod paths both rely on. Pure text generation.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "operator/model/crd_types.h"

namespace shoal::op {

// Where pods mount things (the desired objects and the generated config agree on these).
inline constexpr const char* kConfDir = "/etc/shoal/conf";     // ConfigMap <c>-config
inline constexpr const char* kAuthKeyDir = "/etc/shoal/auth";  // Secret slurmKeyRef
inline constexpr const char* kAuthKeyFile = "/etc/shoal/auth/slurm.key";
inline constexpr const char* kJwtKeyDir = "/etc/shoal/jwt";  // Secret jwtKeyRef
inline constexpr const char* kJwtKeyFile = "/etc/shoal/jwt/jwt.key";
inline constexpr const char* kStateDir = "/var/spool/shoalctld";  // PVC <c>-state
inline constexpr const char* kDbdConfDir = "/etc/shoal/dbd";      // Secret <a>-config
inline constexpr const char* kSlurmUser = "shoal";                // uid kShoalUid in images
inline constexpr int kShoalUid = 401;

// "<c>-<i>.<c>-headless.<ns>.svc": a controller pod's stable DNS name.
std::string ControllerPodHost(const std::string& controller, const std::string& ns, int i);
// "<c>.<ns>.svc": the controller Service (what workers and restapi use).
std::string ControllerServiceHost(const std::string& controller, const std::string& ns);
// "<a>.<ns>.svc": the Accounting Service.
std::string AccountingServiceHost(const std::string& accounting, const std::string& ns);

struct ConfInputs {
  Json controller;             // the Controller CR
  ControllerSpec spec;         // parsed from it
  std::vector<Json> nodesets;  // NodeSet CRs referencing it (any namespace)
  Json accounting;             // the Accounting CR when accountingRef is set, else null
  // Script file names (ConfigMap keys) of prologScriptRefs / epilogScriptRefs, in order.
  std::vector<std::string> prolog_files, epilog_files;
};

// slurm.conf text; NodeSet names that are not valid Slurm names are errors.
Result<std::string> GenerateSlurmConf(const ConfInputs& in);

// slurmdbd.conf text (holds the storage password: goes into a Secret, mode 0600).
std::string GenerateSlurmdbdConf(const Json& accounting_cr, const AccountingSpec& spec,
                                 const std::string& password);

}  // namespace shoal::op
