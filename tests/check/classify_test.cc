// classify(): the pure comparison of two paired calls, one property at a time, and the precedence
// between several differences (the finding's kind is the first that MPI cannot tolerate).
#include <gtest/gtest.h>

#include "lockstep/check/check.h"

namespace lockstep::check {
namespace {

lst_record call(uint8_t op = LST_OP_ALLREDUCE, uint64_t count = 256, uint8_t dtype = LST_DT_FLOAT32,
                uint32_t size = 4, uint8_t redop = LST_RED_SUM, int32_t root = LST_NONE, uint8_t flags = 0) {
  lst_record r{};
  r.word = LST_WORD(LST_KIND_COLLECTIVE, LST_STATE_RETURNED, flags);
  r.api = LST_API_MPI;
  r.op = op;
  r.dtype = dtype;
  r.redop = redop;
  r.u.coll.count = count;
  r.u.coll.dtype_size = size;
  r.u.coll.root_or_peer = root;
  return r;
}

TEST(Classify, EqualCallsFromAnotherSiteAreNoFinding) {
  lst_record a = call(), b = call();
  b.caller = 0x9999;
  Classification k = classify(a, "", b, "");
  EXPECT_FALSE(k.kind.has_value());
  EXPECT_FALSE(k.op || k.name || k.root || k.redop || k.bytes || k.dtype);
}

TEST(Classify, EachPropertyAlone) {
  EXPECT_EQ(classify(call(), "", call(LST_OP_BCAST, 256, LST_DT_FLOAT32, 4, 0, 0), "").kind,
            Kind::kOpMismatch);
  EXPECT_EQ(classify(call(), "", call(LST_OP_ALLREDUCE, 128), "").kind, Kind::kCountMismatch);
  EXPECT_EQ(classify(call(), "", call(LST_OP_ALLREDUCE, 256, LST_DT_FLOAT32, 4, LST_RED_MAX), "").kind,
            Kind::kRedopMismatch);
  lst_record bcast0 = call(LST_OP_BCAST, 8, LST_DT_INT32, 4, 0, 0),
             bcast2 = call(LST_OP_BCAST, 8, LST_DT_INT32, 4, 0, 2);
  EXPECT_EQ(classify(bcast0, "", bcast2, "").kind, Kind::kRootMismatch);
  EXPECT_EQ(classify(call(), "grad/w", call(), "grad/b").kind, Kind::kNameMismatch);
}

TEST(Classify, NonblockingTwinIsAnotherOperation) {
  Classification k =
      classify(call(), "",
               call(LST_OP_ALLREDUCE, 256, LST_DT_FLOAT32, 4, LST_RED_SUM, LST_NONE, LST_F_NONBLOCKING), "");
  EXPECT_EQ(k.kind, Kind::kOpMismatch);
  EXPECT_TRUE(k.op);
}

TEST(Classify, SameBytesOtherTypeIsAWarning) {
  // 256 float32 against 128 float64: equal bytes, different type signature.
  Classification k = classify(call(), "", call(LST_OP_ALLREDUCE, 128, LST_DT_FLOAT64, 8), "");
  EXPECT_EQ(k.kind, Kind::kDtypeMismatch);
  EXPECT_EQ(k.severity, Severity::kWarning);
  EXPECT_FALSE(k.bytes);
  // Other bytes and other type: an error, still named after the type.
  Classification e = classify(call(), "", call(LST_OP_ALLREDUCE, 256, LST_DT_FLOAT64, 8), "");
  EXPECT_EQ(e.kind, Kind::kDtypeMismatch);
  EXPECT_EQ(e.severity, Severity::kError);
  EXPECT_TRUE(e.bytes && e.dtype);
}

TEST(Classify, RulesOfMpiSemantics) {
  // v-variants carry this rank's own count: counts differ legitimately.
  lst_record g1 = call(LST_OP_ALLGATHERV, 10, LST_DT_INT32, 4, 0),
             g2 = call(LST_OP_ALLGATHERV, 30, LST_DT_INT32, 4, 0);
  EXPECT_FALSE(classify(g1, "", g2, "").kind);
  // Derived datatypes compare by bytes only.
  lst_record d1 = call(LST_OP_ALLREDUCE, 1, LST_DT_DERIVED, 64),
             d2 = call(LST_OP_ALLREDUCE, 16, LST_DT_FLOAT32, 4);
  EXPECT_FALSE(classify(d1, "", d2, "").kind);
  // The root of an unrooted collective and the reduction of a broadcast are not compared.
  lst_record a1 = call(LST_OP_ALLREDUCE, 256, LST_DT_FLOAT32, 4, LST_RED_SUM, 1), a2 = call();
  EXPECT_FALSE(classify(a1, "", a2, "").kind);
  lst_record b1 = call(LST_OP_BCAST, 8, LST_DT_INT32, 4, LST_RED_SUM, 0),
             b2 = call(LST_OP_BCAST, 8, LST_DT_INT32, 4, 0, 0);
  EXPECT_FALSE(classify(b1, "", b2, "").kind);
}

TEST(Classify, PrecedenceWhenSeveralDiffer) {
  // Operation first; then the tensor name; then root, reduction, type, count. Every flag is still set.
  lst_record r1 = call(LST_OP_REDUCE, 256, LST_DT_FLOAT32, 4, LST_RED_SUM, 0);
  lst_record r2 = call(LST_OP_REDUCE, 128, LST_DT_FLOAT32, 4, LST_RED_MAX, 1);
  Classification k = classify(r1, "", r2, "");
  EXPECT_EQ(k.kind, Kind::kRootMismatch);
  EXPECT_TRUE(k.root && k.redop && k.bytes);
  EXPECT_EQ(classify(r1, "x", r2, "y").kind, Kind::kNameMismatch);
  lst_record s = call(LST_OP_SCAN, 128, LST_DT_FLOAT32, 4, LST_RED_MAX);
  EXPECT_EQ(classify(call(), "", s, "").kind, Kind::kOpMismatch);
  lst_record m = call(LST_OP_ALLREDUCE, 128, LST_DT_FLOAT32, 4, LST_RED_MAX);
  EXPECT_EQ(classify(call(), "", m, "").kind, Kind::kRedopMismatch);
}

}  // namespace
}  // namespace lockstep::check
