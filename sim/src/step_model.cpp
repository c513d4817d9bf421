// Model files and per-layer costs of `p2v step` (docs/step.md).
#include <fmt/core.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "p2v/engine/dtype.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/json_util.hpp"
#include "p2v/engine/text_util.hpp"
#include "p2v/sim/step.hpp"

namespace p2v::sim::step {

using namespace engine;

using nlohmann::json;

std::int64_t Model::total_params() const {
  std::int64_t n = 0;
  for (const auto& l : layers) n += l.params;
  return n;
}

namespace {

double number(const json& o, const char* key, const std::string& where) {
  const auto& v = o.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
    throw Error(fmt::format("{}.{}: must be a non-negative number, got {}", where, key, json_brief(v)));
  return v.get<double>();
}

void check_fields(const json& o, const std::set<std::string>& known, const std::string& where) {
  for (auto it = o.begin(); it != o.end(); ++it)
    if (!known.count(it.key())) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw Error(fmt::format("{}: unknown field '{}' (expected {})", where, it.key(), list));
    }
}

std::string required_string(const json& o, const char* key, const std::string& where) {
  if (!o.contains(key) || !o[key].is_string() || o[key].get<std::string>().empty())
    throw Error(fmt::format("{}.{}: missing or not a non-empty string", where, key));
  return o[key].get<std::string>();
}

int positive_int(const json& o, const char* key, const std::string& where) {
  if (!o.contains(key) || !o[key].is_number_integer() || o[key].get<long long>() < 1 ||
      o[key].get<long long>() > (1LL << 30))
    throw Error(fmt::format("{}.{}: missing or not a positive integer", where, key));
  return o[key].get<int>();
}

Throughput parse_throughput(const json& o, const std::string& w) {
  if (!o.is_object()) throw Error(w + ": must be an object");
  check_fields(o, {"id", "device", "precision", "framework", "source", "note", "batch", "gpus", "samples_per_s"}, w);
  Throughput t;
  t.id = required_string(o, "id", w);
  t.device = required_string(o, "device", w);
  t.precision = required_string(o, "precision", w);
  t.framework = required_string(o, "framework", w);
  t.source = required_string(o, "source", w);
  if (o.contains("note")) t.note = required_string(o, "note", w);
  t.batch = positive_int(o, "batch", w);
  t.gpus = positive_int(o, "gpus", w);
  if (!o.contains("samples_per_s")) throw Error(w + ".samples_per_s: missing");
  t.samples_per_s = number(o, "samples_per_s", w);
  if (!(t.samples_per_s > 0)) throw Error(w + ".samples_per_s: must be positive");
  return t;
}

}  // namespace

double Throughput::step_s() const { return batch / (samples_per_s / gpus); }

const Throughput& Model::find_throughput(const std::string& id) const {
  std::string ids;
  for (const auto& t : throughput) {
    if (t.id == id) return t;
    ids += (ids.empty() ? "" : ", ") + t.id;
  }
  throw Error(fmt::format("--throughput '{}': model '{}' has no such entry ({})", id, name,
                          ids.empty() ? "it has no \"throughput\" list" : "it has " + ids));
}

Model parse_model_json(const std::string& text, const std::string& origin) {
  json j = parse_json_object(text, origin);
  check_fields(j,
               {"name", "source", "how", "input", "batch", "grad_dtype", "state_bytes_per_param", "total_params",
                "layers", "throughput"},
               origin);
  Model m;
  m.name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : origin;
  if (j.contains("batch")) m.batch = positive_int(j, "batch", origin);
  if (j.contains("throughput")) {
    if (!j["throughput"].is_array()) throw Error(origin + ": throughput: must be a list");
    for (std::size_t i = 0; i < j["throughput"].size(); ++i) {
      auto t = parse_throughput(j["throughput"][i], fmt::format("{}: throughput[{}]", origin, i));
      for (const auto& u : m.throughput)
        if (u.id == t.id) throw Error(fmt::format("{}: throughput[{}].id: '{}' appears twice", origin, i, t.id));
      m.throughput.push_back(std::move(t));
    }
  }
  if (j.contains("grad_dtype")) {
    const std::string d =
        j["grad_dtype"].is_string() ? j["grad_dtype"].get<std::string>() : json_brief(j["grad_dtype"]);
    // Any spelling of engine::parse_dtype (fp32, f32, float32, float, bf16, ...), a float type.
    engine::Dtype dt = engine::Dtype::F32;
    try {
      dt = engine::parse_dtype(d, "grad_dtype");
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", origin, e.what()));
    }
    if (dt != engine::Dtype::F32 && dt != engine::Dtype::F16 && dt != engine::Dtype::BF16)
      throw Error(fmt::format("{}: grad_dtype: '{}' is not a gradient type (expected f32, f16 or bf16, any spelling)",
                              origin, d));
    m.grad_bytes = engine::dtype_info(dt).bytes;
  }
  if (j.contains("state_bytes_per_param")) {
    m.state_bytes_per_param = number(j, "state_bytes_per_param", origin);
  }
  if (!j.contains("layers") || !j["layers"].is_array() || j["layers"].empty())
    throw Error(origin +
                ": layers: missing or empty (a list of {name, params, fwd_flops|fwd_s, ...} in forward order)");
  const auto& ls = j["layers"];
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const std::string w = fmt::format("{}: layers[{}]", origin, i);
    const auto& o = ls[i];
    if (!o.is_object()) throw Error(w + ": must be an object");
    check_fields(o, {"name", "params", "fwd_flops", "bwd_flops", "fwd_s", "bwd_s"}, w);
    Layer l;
    l.name = o.contains("name") && o["name"].is_string() ? o["name"].get<std::string>() : fmt::format("layer{}", i);
    if (!o.contains("params") || !o["params"].is_number_integer() || o["params"].get<long long>() < 0)
      throw Error(fmt::format("{}.params: missing or not a non-negative integer", w));
    l.params = o["params"].get<std::int64_t>();
    for (auto [key, dst] : {std::pair{"fwd_flops", &l.fwd_flops}, std::pair{"bwd_flops", &l.bwd_flops},
                            std::pair{"fwd_s", &l.fwd_s}, std::pair{"bwd_s", &l.bwd_s}})
      if (o.contains(key)) *dst = number(o, key, w);
    const bool flops = l.fwd_flops >= 0 || l.bwd_flops >= 0, secs = l.fwd_s >= 0 || l.bwd_s >= 0;
    if (flops && secs) throw Error(w + ": give either fwd_flops/bwd_flops or fwd_s/bwd_s, not both");
    if (!(l.fwd_flops >= 0) && !(l.fwd_s >= 0))
      throw Error(w + ": needs fwd_flops (with the system's device numbers) or measured fwd_s");
    m.layers.push_back(std::move(l));
  }
  if (j.contains("total_params")) {
    if (!j["total_params"].is_number_integer()) throw Error(origin + ": total_params: must be an integer");
    const auto t = j["total_params"].get<std::int64_t>();
    if (t != m.total_params())
      throw Error(fmt::format("{}: total_params is {} but the layers' params sum to {}", origin, t, m.total_params()));
  }
  return m;
}

Model load_model_file(const std::string& path) {
  return parse_model_json(engine::read_text_file(path, "model file"), path);
}

std::vector<LayerCost> layer_costs(const Model& m, const System& s, int data_parallel, int model_parallel, bool zero,
                                   const ComputeOptions& co, ComputeFit* fit) {
  if (data_parallel < 1 || model_parallel < 1) throw Error("step: parallel degrees must be positive");
  if (co.batch < 0 || co.measured_step_s < 0 || !std::isfinite(co.measured_step_s))
    throw Error("step: batch and measured step time must be non-negative");
  if (co.batch > 0 && m.batch < 1)
    throw Error(
        fmt::format("model '{}' gives no \"batch\", so its times cannot be rescaled to batch {}", m.name, co.batch));
  const double batch_scale = co.batch > 0 ? static_cast<double>(co.batch) / m.batch : 1.0;
  const bool fitted = co.measured_step_s > 0;
  const bool peak = s.device && s.device->peak_tflops > 0;
  const bool device = peak && s.device->efficiency > 0;
  bool has_flops = false, has_secs = false;
  const Layer* first_flops = nullptr;
  for (const auto& l : m.layers) {
    if (l.fwd_flops >= 0) {
      has_flops = true;
      if (!first_flops) first_flops = &l;
    } else {
      has_secs = true;
    }
  }
  // The speed FLOPs are turned into seconds with before any fit. A fit needs no device numbers
  // unless FLOPs and measured seconds are mixed (their ratio is then the device's speed).
  double flops_per_s = 0;
  if (has_flops) {
    if (device)
      flops_per_s = s.device->peak_tflops * 1e12 * s.device->efficiency;
    else if (fitted && !has_secs)
      flops_per_s = 1e12;  // any unit: the fit rescales it
    else
      throw Error(fmt::format(
          "model '{}' gives FLOPs (layer '{}') but system '{}' has no device numbers: add \"device\": "
          "{{\"peak_tflops\": ..., \"efficiency\": ...}} to the system file, give a measured step time "
          "(--measured-step-ms, or --throughput with the model's published numbers), or measured fwd_s/bwd_s "
          "to the model",
          m.name, first_flops->name, s.name));
  }
  if (s.device && s.device->memory_gb > 0) {
    const double need =
        static_cast<double>(m.total_params()) * m.state_bytes_per_param / model_parallel / (zero ? data_parallel : 1);
    if (need > s.device->memory_gb * 1e9)
      throw Error(fmt::format(
          "model '{}' ({} parameters x {} bytes of state) needs {:.1f} GB per device on this placement (model-parallel "
          "degree {}{}), but a {} device has {} GB: shard more (more non-reduced axes{})",
          m.name, m.total_params(), m.state_bytes_per_param, need / 1e9, model_parallel,
          zero ? fmt::format(", ZeRO over {}", data_parallel) : std::string(),
          s.device->name.empty() ? s.name : s.device->name, s.device->memory_gb, zero ? "" : ", or --mode zero"));
  }
  // One device's times at model-parallel degree 1, before any fit.
  std::vector<LayerCost> out;
  double total_s = 0, total_flops = 0;
  for (const auto& l : m.layers) {
    LayerCost c;
    if (l.fwd_flops >= 0) {
      const double fwd = l.fwd_flops * batch_scale,
                   bwd = (l.bwd_flops >= 0 ? l.bwd_flops : 2 * l.fwd_flops) * batch_scale;
      total_flops += fwd + bwd;
      c.fwd_s = fwd / flops_per_s;
      c.bwd_s = bwd / flops_per_s;
    } else {
      c.fwd_s = l.fwd_s * batch_scale;
      c.bwd_s = (l.bwd_s >= 0 ? l.bwd_s : 2 * l.fwd_s) * batch_scale;
    }
    total_s += c.fwd_s + c.bwd_s;
    c.grad_bytes = static_cast<double>(l.params) * m.grad_bytes / model_parallel;
    out.push_back(c);
  }
  double scale = 1;
  if (fitted) {
    if (!(total_s > 0)) throw Error(fmt::format("model '{}' has no compute to fit a step time to", m.name));
    scale = co.measured_step_s / total_s;
  }
  for (auto& c : out) {
    c.fwd_s *= scale / model_parallel;
    c.bwd_s *= scale / model_parallel;
  }
  if (fit) {
    *fit = ComputeFit{};
    fit->fitted = fitted;
    fit->batch = co.batch > 0 ? co.batch : m.batch;
    fit->step_s = total_s * scale;
    fit->flops = total_flops;
    if (has_flops) {
      fit->flops_per_s = flops_per_s / scale;
      if (peak) fit->efficiency = fit->flops_per_s / (s.device->peak_tflops * 1e12);
    }
    // Relative to the speed before the fit: only meaningful when that speed was the device's or measured.
    fit->time_scale = has_flops && !device ? 0 : scale;
  }
  return out;
}

}  // namespace p2v::sim::step
