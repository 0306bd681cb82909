#include "cli/commands.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/client_commands.h"
#include "cli/profile_command.h"
#include "cli/simulate_command.h"
#include "cli/usage_errors.h"
#include "daemon/serve_command.h"
#include "dlsched/common/version.h"
#include "io/profile.h"
#include "io/suggest.h"

namespace dlsched::cli {
namespace {

int ListPolicies(bool verbose, std::ostream& out, std::ostream& err) {
  for (const auto& [name, text] : BuiltinProfiles()) {
    if (!verbose) {
      out << name << "\n";
      continue;
    }
    Result<PolicyProfile> profile = ParsePolicyProfile(text, name);
    if (!profile.ok()) {
      err << "dlsched: " << profile.status().message() << "\n";
      return kExitRuntimeError;
    }
    out << name << "\t" << profile->description() << "\n";
  }
  return kExitOk;
}

}  // namespace

int Main(int argc, char** argv, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "dlsched: a scheduler and trace-driven simulator for deep-learning jobs on shared "
      "GPU clusters.",
      "dlsched"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(kVersion));

  SimulateFlags simulate_flags;
  CLI::App* simulate = app.add_subcommand(
      "simulate", "Replay a workload on a cluster under one or more policies and compare them.");
  AddSimulateFlags(*simulate, simulate_flags);

  ProfileFlags profile_flags;
  CLI::App* profile = app.add_subcommand(
      "profile",
      "Profile job types on a cluster's GPU types into a profile store for the performance "
      "predictor, or report the predictor's accuracy (--evaluate).");
  AddProfileFlags(*profile, profile_flags);

  // The live scheduler (issue 6): the daemon, and the commands that talk to it over REST.
  daemon::ServeFlags serve_flags;
  CLI::App* serve = app.add_subcommand(
      "serve", "Run the scheduler daemon: REST API, SQLite state, jobs as local processes.");
  daemon::AddServeFlags(*serve, serve_flags);
  std::unique_ptr<ClientCommands> client = AddClientCommands(app);

  bool verbose = false;
  CLI::App* policies =
      app.add_subcommand("policies", "List the built-in policy names, one per line.");
  policies->add_flag("-v,--verbose", verbose, "Also print each policy's description.");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError& e) {
    // CLI11 blames the words left over, often not the mistyped option before them
    // ("submit --nmae x -- true" blames "true"): name the unknown option and its closest match.
    const CLI::App* command = &app;
    while (!command->get_subcommands().empty()) command = command->get_subcommands().front();
    std::vector<std::string> args(argv + 1, argv + argc);
    const auto named = std::find(args.begin(), args.end(), command->get_name());
    if (command != &app && named != args.end()) args.erase(args.begin(), named + 1);
    const std::string name = command == &app ? "dlsched" : "dlsched " + command->get_name();
    if (const std::optional<std::string> message = UnknownOptionMessage(*command, args)) {
      err << name << ": " << *message << "\nRun '" << name << " --help' for usage.\n";
      return kExitUsage;
    }
    app.exit(e, out, err);
    err << "Run 'dlsched --help' or 'dlsched <command> --help' for usage.\n";
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    // A mistyped command reads to CLI11 as no command at all.
    if (app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-') {
      std::vector<std::string> names;
      for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
        names.push_back(sub->get_name());
      }
      err << "dlsched: unknown command '" << argv[1] << "'";
      if (const std::optional<std::string> close = ClosestName(argv[1], names)) {
        err << "; did you mean " << *close << "?";
      }
      err << "\nRun 'dlsched --help' for the commands.\n";
      return kExitUsage;
    }
    // Help and version requests arrive as ParseErrors with exit code 0; exit() prints them
    // (help for the subcommand that asked).
    if (app.exit(e, out, err) == 0) return kExitOk;
    err << "Run 'dlsched --help' or 'dlsched <command> --help' for usage.\n";
    return kExitUsage;
  }
  if (simulate->parsed()) return RunSimulate(simulate_flags, out, err);
  if (profile->parsed()) return RunProfile(profile_flags, out, err);
  if (serve->parsed()) return daemon::RunServe(serve_flags, out, err);
  if (client->parsed()) return RunClientCommand(*client, out, err);
  if (policies->parsed()) return ListPolicies(verbose, out, err);
  return kExitUsage;
}

}  // namespace dlsched::cli
