// The cluster clients' bindings (types only): ClusterClient (sync), AsyncClusterCore (the asyncio
// cluster client's core: bindings/async_core.hpp over a LoopCluster) and the hash-slot helpers.
// The GIL is released for all blocking I/O.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings/async_core.hpp"
#include "bindings/conversions.hpp"
#include "bindings/guarded.hpp"
#include "connection/cluster.hpp"
#include "errors.hpp"
#include "transport/cluster_client.hpp"
#include "transport/fork.hpp"

namespace py = pybind11;
using namespace py::literals;

namespace rlb::bindings {
namespace {

using transport::ClusterClient;
using transport::ClusterOptions;

// The cluster clients' arguments: startup_nodes, then the options of the table (conversions.hpp)
// that every node's connections share.
ClusterOptions cluster_options(py::handle startup_nodes, const py::kwargs& kwargs) {
  auto arguments = client_arguments(kClusterClient, py::args(), kwargs);
  ClusterOptions options;
  options.startup_nodes = address_pairs(startup_nodes, "startup_nodes");
  options.node = std::move(arguments.client);
  if (!options.startup_nodes.empty()) {
    std::tie(options.node.host, options.node.port) = options.startup_nodes.front();
  }
  options.read_from_replicas = arguments.read_from_replicas;
  options.validate();
  return options;
}

// Calls beyond this many unsettled wait in the client (as the one-node client's max_pending).
constexpr std::size_t kMaxPending = 10000;

std::unique_ptr<AsyncClusterCore> make_async_core(ClusterOptions options) {
  std::shared_ptr<transport::LoopCluster> cluster;
  {
    py::gil_scoped_release release;  // loading CA files
    cluster = transport::LoopCluster::create(std::move(options));
  }
  return std::make_unique<AsyncClusterCore>(std::move(cluster), kMaxPending);
}

const char* const kClusterDoc =
    "startup_nodes: [(host, port), ...], any nodes of the cluster (the others are learnt from "
    "them); the options: redis_leaderboard.options.ClientOptions.cluster_kwargs() and "
    "read_from_replicas.";

py::list shards_list(ClusterClient& client) {
  std::vector<ClusterClient::ShardView> shards;
  {
    py::gil_scoped_release release;
    shards = client.shards();
  }
  py::list out;
  auto node = [](const connection::cluster::NodeAddress& address) {
    return py::make_tuple(address.host, address.port);
  };
  for (const auto& shard : shards) {
    py::list replicas, ranges;
    for (const auto& replica : shard.replicas) replicas.append(node(replica));
    for (const auto& [first, last] : shard.ranges) ranges.append(py::make_tuple(first, last));
    py::dict item;
    item["primary"] = node(shard.primary);
    item["replicas"] = replicas;
    item["slots"] = ranges;
    out.append(item);
  }
  return out;
}

py::dict cluster_stats(const connection::Stats& stats, const ClusterClient& client,
                       std::uint64_t calls) {
  py::dict out = stats_dict(stats);
  out["redirects"] = client.redirects();
  out["retries"] = client.retries();
  out["resends"] = client.resends();
  out["calls"] = calls;
  return out;
}

}  // namespace

void declare_cluster(py::module_& m) {
  namespace cluster = connection::cluster;
  m.def(
      "key_slot", [](const std::string& key) { return cluster::key_slot(key); }, "key"_a,
      "The Redis Cluster hash slot of `key` (CRC16 of its hash tag, else of the key, mod 16384).");
  m.def(
      "has_hash_tag", [](const std::string& key) { return cluster::has_hash_tag(key); }, "key"_a,
      "True when `key` has a hash tag (a non-empty {...}, the first '{' to the next '}'): every "
      "key starting with it is in its slot.");

  py::class_<ClusterClient, std::shared_ptr<ClusterClient>> client(
      m, "ClusterClient",
      "A blocking Redis Cluster client, safe to share between threads: one connection pool per "
      "node, requests routed by their keys' hash slot.",
      guarded());
  py::class_<AsyncClusterCore> async_core(
      m, "AsyncClusterCore",
      "The asyncio cluster client's core; use redis_leaderboard.asyncio.ClusterClient.", guarded());
  {
    py::options signatures;  // the docstring's signature comes from the option table
    signatures.disable_function_signatures();
    const auto doc = constructor_doc(kClusterClient, "startup_nodes, ", kClusterDoc);
    client.def(py::init([](py::handle startup_nodes, const py::kwargs& kwargs) {
                 ClusterOptions options = cluster_options(startup_nodes, kwargs);
                 py::gil_scoped_release release;  // loading CA files
                 return std::make_shared<ClusterClient>(std::move(options));
               }),
               "startup_nodes"_a, doc.c_str());
    async_core.def(py::init([](py::handle startup_nodes, const py::kwargs& kwargs) {
                     ClusterOptions options = cluster_options(startup_nodes, kwargs);
                     return make_async_core(std::move(options));
                   }),
                   "startup_nodes"_a, doc.c_str());
  }
  client
      .def(
          "run",
          [](ClusterClient& self, PyOperation& operation) {
            auto taken = operation.take();
            leaderboard::Result result;
            {
              PumpAtExit pump;
              py::gil_scoped_release release;
              result = self.run(std::move(taken));
            }
            return to_python(result);
          },
          "operation"_a)
      .def(
          "run_many",
          [](ClusterClient& self, py::iterable operations) {
            std::vector<ClusterClient::Outgoing> batch;
            const auto now = transport::Clock::now();
            for (py::handle item : operations) {
              batch.push_back({batch.size(), operation_arg(item).take(), now});
            }
            std::vector<connection::Completion> done;
            {
              PumpAtExit pump;
              py::gil_scoped_release release;
              done = self.run_batch(std::move(batch));
            }
            py::list out;
            for (auto& completion : done) {
              if (completion.error) std::rethrow_exception(completion.error);
              out.append(to_python(completion.result));
            }
            return out;
          },
          "operations"_a,
          "Run operations at once (one pipelined batch per node, every node written before any "
          "reply is read); their results in order. The first error is raised once all are done.")
      .def(
          "run_pipelined",
          [](ClusterClient& self, py::iterable operations, py::function on_result,
             std::size_t window) {
            run_pipelined_from_python(self, std::move(operations), std::move(on_result), window);
          },
          "operations"_a, "on_result"_a, "window"_a = 4)
      .def("execute_command",
           [](ClusterClient& self, py::args args) {
             return execute_command_from_python(args, [&self](std::vector<std::string> argv) {
               return self.execute(std::move(argv));
             });
           })
      .def("ping",
           [](ClusterClient& self) {
             PumpAtExit pump;
             py::gil_scoped_release release;
             return std::get<bool>(self.run(leaderboard::ping()));
           })
      .def("refresh", &ClusterClient::refresh, py::call_guard<py::gil_scoped_release>(),
           "Read the slot map again now.")
      .def("shards", &shards_list,
           "The slot map: [{'primary': (host, port), 'replicas': [...], 'slots': [(first, "
           "last), ...]}, ...].")
      .def(
          "node_for_key",
          [](ClusterClient& self, const std::string& key) {
            connection::cluster::NodeAddress node;
            {
              py::gil_scoped_release release;
              node = self.primary_for(cluster::key_slot(key));
            }
            return py::make_tuple(node.host, node.port);
          },
          "key"_a, "The (host, port) of the primary serving `key`'s slot now.")
      .def("stats", [](const ClusterClient& self) { return cluster_stats(self.stats(), self, 0); })
      .def(
          "dedicated",
          [](const ClusterClient& self) {
            ClusterOptions options = self.options();
            py::gil_scoped_release release;  // loading CA files
            return std::make_shared<ClusterClient>(std::move(options));
          },
          "A new client with this one's options (its own connections), for calls that hold a "
          "connection, as reading events does.")
      .def("close", &ClusterClient::close, py::call_guard<py::gil_scoped_release>())
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](ClusterClient& self, py::args) { self.close(); })
      .def("__repr__", [](const ClusterClient& self) {
        std::string nodes;
        for (const auto& [host, port] : self.options().startup_nodes) {
          nodes += (nodes.empty() ? "" : ", ") + host + ":" + std::to_string(port);
        }
        return "ClusterClient(" + nodes + ")";
      });

  async_core.def("run", &AsyncClusterCore::run, "operation"_a)
      .def("submit", &AsyncClusterCore::submit, "operation"_a, "loop"_a)
      .def("run_pipelined", &AsyncClusterCore::run_pipelined, "operations"_a, "on_result"_a,
           "window"_a, "loop"_a)
      .def("bind", &AsyncClusterCore::bind, "loop"_a)
      .def("close", &AsyncClusterCore::close)
      .def_property_readonly("pending", &AsyncClusterCore::pending)
      .def_property_readonly("closed", &AsyncClusterCore::closed)
      .def("refresh",
           [](AsyncClusterCore& self) {
             py::gil_scoped_release release;
             self.transport().client().refresh();
           })
      .def("shards", [](AsyncClusterCore& self) { return shards_list(self.transport().client()); })
      .def("stats",
           [](AsyncClusterCore& self) {
             return cluster_stats(self.stats(), self.transport().client(), self.calls());
           })
      .def(
          "dedicated",
          [](AsyncClusterCore& self) {
            return make_async_core(self.transport().client().options());
          },
          "A new core with this one's options (its own connections).")
      .def("address", [](AsyncClusterCore& self) {
        std::string nodes;
        for (const auto& [host, port] : self.transport().client().options().startup_nodes) {
          nodes += (nodes.empty() ? "" : ", ") + host + ":" + std::to_string(port);
        }
        return nodes;
      });
}

}  // namespace rlb::bindings
