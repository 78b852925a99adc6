// sacctmgr (man sacctmgr): add|create, modify|update, delete|remove and show|list of clusters,
// accounts, users, QOS, associations, coordinators and TRES, through shoaldbd. The command line
// is parsed by sacctmgr_parse.cc, listings laid out by sacctmgr_format.cc; shoaldbd validates
// and applies changes and answers the lines to print. Without -i a change is first sent as a dry
// run, printed, and committed only when the user answers y within 30 seconds.
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/sacctmgr_format.h"
#include "cli/sacctmgr_parse.h"

#ifndef SHOAL_VERSION_STRING
#define SHOAL_VERSION_STRING "0.1.0"
#endif

namespace shoal::cli {
namespace {

using sacctmgr::Action;
using sacctmgr::Command;
using sacctmgr::Options;

void Out(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }
void Err(const std::string& text) {
  std::string line = text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

constexpr const char* kUsage =
    "sacctmgr [<OPTION>] [<COMMAND>]\n"
    "    Valid <OPTION> values are:\n"
    "     -h or --help: equivalent to \"help\" command\n"
    "     -i or --immediate: commit changes immediately without asking\n"
    "     -n or --noheader: no header will be added to the beginning of output\n"
    "     -p or --parsable: output will be '|' delimited with a '|' at the end\n"
    "     -P or --parsable2: output will be '|' delimited without a '|' at the end\n"
    "     -Q or --quiet: equivalent to \"quiet\" command\n"
    "     -r or --readonly: equivalent to \"readonly\" command\n"
    "     -s or --associations: equivalent to \"associations\" command\n"
    "     -v or --verbose: equivalent to \"verbose\" command\n"
    "     -V or --version: equivalent to \"version\" command\n"
    "\n"
    "  <keyword> may be omitted from the execute line and sacctmgr will execute\n"
    "  in interactive mode. It will process commands as entered until explicitly\n"
    "  terminated.\n"
    "\n"
    "    Valid <COMMAND> values are:\n"
    "     add <ENTITY> <SPECS>     add entity\n"
    "     create <ENTITY> <SPECS>  same as add\n"
    "     delete <ENTITY> where <SPECS>  delete the specified entity(s)\n"
    "     exit                     terminate sacctmgr\n"
    "     help                     print this description of use.\n"
    "     list <ENTITY> [<SPECS>]  display info of identified entity, default\n"
    "                              is display all.\n"
    "     modify <ENTITY> where <SPECS> set <SPECS>  modify entity\n"
    "     quit                     terminate this command.\n"
    "     remove <ENTITY> where <SPECS>  same as delete\n"
    "     show                     same as list\n"
    "     version                  display tool version number.\n"
    "\n"
    "  <ENTITY> may be \"account\", \"association\", \"cluster\", \"coordinator\",\n"
    "       \"qos\", \"tres\" or \"user\".\n"
    "\n"
    "  All commands entitys, and options are case insensitive.\n";

// "y"/"Y" within 30 seconds; anything else (or no terminal answer) declines.
bool CommitCheck() {
  Out("Would you like to commit changes? (You have 30 seconds to decide)\n(N/y): ");
  std::fflush(stdout);
  pollfd p{STDIN_FILENO, POLLIN, 0};
  if (poll(&p, 1, 30000) <= 0) {
    Out("\n");
    return false;
  }
  char c = 0;
  if (read(STDIN_FILENO, &c, 1) != 1) return false;
  return c == 'y' || c == 'Y';
}

// An error Status from shoaldbd is the text sacctmgr prints; transport failures get the prefix.
void PrintError(const Status& st) {
  if (st.code() == ErrorCode::kUnavailable || st.code() == ErrorCode::kProtocol ||
      st.code() == ErrorCode::kAuthFailure) {
    Err("sacctmgr: error: " + st.message());
  } else {
    Err(st.message());
  }
}

int RunShow(const Command& cmd, const Options& opts) {
  const std::string& entity = cmd.show.entity();
  if (entity != "association" && entity != "account" && entity != "user" && entity != "cluster" &&
      entity != "qos" && entity != "tres" && entity != "event") {
    Err("sacctmgr: error: listing " + entity + " is not supported by Shoal");
    return 1;
  }
  auto columns =
      sacctmgr::ResolveColumns(entity, cmd.format, cmd.show.with_assoc(), cmd.tree, cmd.wolimits);
  if (!columns) {
    Err(columns.error());
    return 1;
  }
  auto ctx = LoadClientContext();
  if (!ctx) {
    Err("sacctmgr: error: " + ctx.error());
    return 1;
  }
  pb::DbdRequest req;
  *req.mutable_show() = cmd.show;
  auto resp = CallDbd(*ctx, req);
  if (!resp) {
    PrintError(resp.status());
    return 1;
  }
  sacctmgr::RenderOptions ro;
  ro.parsable = opts.parsable;
  ro.noheader = opts.noheader;
  ro.tree = cmd.tree;
  Out(sacctmgr::RenderShow(entity, resp->show(), *columns, ro));
  return 0;
}

int RunAdmin(Command cmd, const Options& opts) {
  auto ctx = LoadClientContext();
  if (!ctx) {
    Err("sacctmgr: error: " + ctx.error());
    return 1;
  }
  pb::DbdRequest req;
  cmd.admin.set_dry_run(!opts.immediate);
  *req.mutable_admin() = cmd.admin;
  auto resp = CallDbd(*ctx, req);
  if (!resp) {
    PrintError(resp.status());
    return 1;
  }
  if (!opts.quiet) {
    for (const auto& line : resp->admin().lines()) Out(line + "\n");
  }
  std::fflush(stdout);
  if (resp->admin().changed() == 0) return 1;  // "Nothing new added." and friends
  if (opts.immediate) return 0;
  if (!CommitCheck()) {
    Out(" Changes Discarded\n");
    return 0;
  }
  req.mutable_admin()->set_dry_run(false);
  auto done = CallDbd(*ctx, req);
  if (!done) {
    PrintError(done.status());
    return 1;
  }
  return 0;
}

int Run(const std::vector<std::string>& words, const Options& opts) {
  auto cmd = sacctmgr::ParseCommand(words, opts);
  if (!cmd) {
    Err(cmd.error());
    return 1;
  }
  switch (cmd->action) {
    case Action::kHelp:
      Out(kUsage);
      return 0;
    case Action::kVersion:
      Out("shoal " SHOAL_VERSION_STRING "\n");
      return 0;
    case Action::kShow:
      return RunShow(*cmd, opts);
    case Action::kAdmin:
      return RunAdmin(std::move(*cmd), opts);
    case Action::kNone:
      break;
  }
  return 0;
}

// Words of one interactive line; "..." and '...' group words.
std::vector<std::string> SplitLine(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  char quote = 0;
  bool have = false;
  for (char c : line) {
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else {
        cur += c;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
      have = true;
    } else if (c == ' ' || c == '\t') {
      if (have || !cur.empty()) out.push_back(cur);
      cur.clear();
      have = false;
    } else {
      cur += c;
    }
  }
  if (have || !cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

int SacctmgrMain(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc), words;
  auto opts = sacctmgr::ParseOptions(args, &words);
  if (!opts) {
    Err(opts.error());
    return 1;
  }
  if (!words.empty() || opts->help || opts->version) return Run(words, *opts);
  // Interactive mode: one command per line until quit/exit or end of input.
  int rc = 0;
  bool tty = isatty(STDIN_FILENO);
  std::string line;
  while (true) {
    if (tty) {
      Out("sacctmgr: ");
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    std::vector<std::string> w = SplitLine(line);
    if (w.empty()) continue;
    if (w[0] == "quit" || w[0] == "exit") break;
    if (w[0] == "quiet") {
      opts->quiet = true;
      continue;
    }
    if (w[0] == "verbose") {
      opts->verbose++;
      continue;
    }
    rc = Run(w, *opts);
  }
  return rc;
}

}  // namespace shoal::cli
