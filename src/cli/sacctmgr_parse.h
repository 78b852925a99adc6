// sacctmgr's command line -> an administrative request (AcctAdminRequest) or a listing request
// (AcctShowRequest) plus display options. Pure: no I/O. Error texts are what sacctmgr prints on
// stderr (Slurm's wording), e.g. "invalid keyword: foo".
//
//   sacctmgr [-hinpPQrsvV] add|create|modify|update|delete|remove|show|list <entity> [specs]
//   specs: name[,name...]  key=value  key+=value  key-=value  where ...  set ...
#pragma once

#include <string>
#include <vector>

#include "acct.pb.h"
#include "common/result.h"

namespace shoal::cli::sacctmgr {

struct Options {
  bool immediate = false;   // -i: commit without asking
  bool noheader = false;    // -n
  int parsable = 0;         // 1: -p ("a|b|"), 2: -P ("a|b")
  bool quiet = false;       // -Q
  bool readonly = false;    // -r
  bool with_assoc = false;  // -s
  int verbose = 0;          // -v
  bool help = false;        // -h
  bool version = false;     // -V
};

enum class Action { kNone, kHelp, kVersion, kAdmin, kShow };

struct Command {
  Action action = Action::kNone;
  pb::AcctAdminRequest admin;
  pb::AcctShowRequest show;         // entity is canonical: account, association, cluster, ...
  std::vector<std::string> format;  // format= fields as given ("Account", "User%20")
  bool tree = false;                // show assoc tree
  bool wolimits = false;            // show assoc wolimits / cluster wolimits
};

// Splits leading options from the command words. Errors like getopt's:
// "sacctmgr: unrecognized option '--foo'\nTry \"sacctmgr --help\" for more information".
Result<Options> ParseOptions(const std::vector<std::string>& args, std::vector<std::string>* words);

// The command words (verb, entity, specs).
Result<Command> ParseCommand(const std::vector<std::string>& words, const Options& opts);

// "assoc" -> "association", "acct" -> "account", "qos" -> "qos"; "" when not an entity.
std::string CanonicalEntity(const std::string& word);

}  // namespace shoal::cli::sacctmgr
