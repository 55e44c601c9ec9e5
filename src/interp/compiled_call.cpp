#include "interp/compiled_call.hpp"

#include <algorithm>
#include <cstring>

#include "runtime/tensor.hpp"
#include "support/diagnostics.hpp"

namespace zyntax {

std::vector<Value*> CompiledCall::bound(Scope& scope, const std::vector<std::string>& names) {
  std::vector<Value*> values;
  values.reserve(names.size());
  for (const std::string& name : names) values.push_back(&scope.at(name).value);
  return values;
}

CompiledCall::CompiledCall(const host::HostCode& code, Scope& scope, const std::vector<std::string>& names)
    : CompiledCall(code, bound(scope, names)) {}

CompiledCall::CompiledCall(const host::HostCode& code, const std::vector<Value*>& values)
    : code_(code), tensors_(values.size()), words_(values.size()) {
  records_.reserve(values.size());  // the words' addresses must not move
  for (size_t i = 0; i < values.size(); ++i) {
    Value& v = *values[i];
    switch (v.kind) {
      case Value::Kind::Int: words_[i] = static_cast<uint64_t>(v.i); break;
      case Value::Kind::Bool: words_[i] = v.b; break;
      case Value::Kind::Float: std::memcpy(&words_[i], &v.f, sizeof(double)); break;
      case Value::Kind::Record: {
        // One array per record however many arguments name it.
        auto same = std::find_if(records_.begin(), records_.end(), [&](const auto& r) { return r.first == v.record.get(); });
        if (same == records_.end()) {
          std::vector<uint64_t> fields;
          for (const auto& [field, fv] : v.record->fields) {
            uint64_t w = fv.kind == Value::Kind::Int ? static_cast<uint64_t>(fv.i) : fv.kind == Value::Kind::Bool ? uint64_t{fv.b} : 0;
            if (fv.kind == Value::Kind::Float) std::memcpy(&w, &fv.f, sizeof w);
            fields.push_back(w);
          }
          records_.emplace_back(v.record.get(), std::move(fields));
          same = records_.end() - 1;
        }
        words_[i] = reinterpret_cast<uint64_t>(same->second.data());
        break;
      }
      default: {  // a tensor: written through the non-const bytes (a device's copy is dropped)
        Tensor& t = v.tensor;
        tensors_[i].data = code.writes_tensors ? t.data() : const_cast<void*>(std::as_const(t).data());
        for (int64_t a = 0; a < t.rank(); ++a) tensors_[i].shape[a] = t.dim(a);
        words_[i] = reinterpret_cast<uint64_t>(&tensors_[i]);
      }
    }
  }
}

Value CompiledCall::finish(const host::HostCallContext& ctx, uint64_t result, int max_depth) {
  if (code_.writes_records) {  // what the interpreter would have stored, failed call or not
    for (auto& [record, fields] : records_) {
      for (size_t k = 0; k < fields.size(); ++k) {
        Value& fv = record->fields[k].second;
        if (fv.kind == Value::Kind::Int) fv.i = static_cast<int64_t>(fields[k]);
        else if (fv.kind == Value::Kind::Bool) fv.b = fields[k] != 0;
        else std::memcpy(&fv.f, &fields[k], sizeof fv.f);
      }
    }
  }
  if (ctx.error_site >= 0) {
    const host::ErrorSite& site = code_.sites.at(static_cast<size_t>(ctx.error_site));
    switch (site.kind) {
      case host::ErrorSite::Kind::IndexOutOfRange: {
        Shape shape(ctx.tensor->shape, ctx.tensor->shape + site.rank);
        throw Error(site.span, "index " + std::to_string(ctx.detail) + " is out of range for axis " + std::to_string(site.axis) +
                                   " of a tensor of shape " + shape_str(shape));
      }
      case host::ErrorSite::Kind::IntegerDivisionByZero: throw Error(site.span, "integer division by zero");
      case host::ErrorSite::Kind::IntegerRemainderByZero: throw Error(site.span, "integer remainder by zero");
      case host::ErrorSite::Kind::StepNotPositive: throw Error(site.span, "the loop step must be positive, got " + std::to_string(ctx.detail));
      case host::ErrorSite::Kind::CallsTooDeep:
        throw Error(site.span, "calls nested more than " + std::to_string(max_depth) + " deep (runaway recursion?)");
    }
  }
  switch (code_.result.kind) {
    case host::HostType::Kind::Int: return Value::of_int(static_cast<int64_t>(result));
    case host::HostType::Kind::Bool: return Value::of_bool(result != 0);
    case host::HostType::Kind::Float: {
      double d;
      std::memcpy(&d, &result, sizeof d);
      Value v = Value::of_float(d);
      v.dtype = code_.result.dtype;
      return v;
    }
    default: return Value::none();
  }
}

}  // namespace zyntax
