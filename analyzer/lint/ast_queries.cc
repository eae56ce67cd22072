// AST queries of the lint analysis (see ast_queries.h).
#include "lint/ast_queries.h"

#include <clang/AST/Attr.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/StmtCXX.h>

#include <functional>
#include <vector>

namespace lockstep::lint {

using namespace clang;

namespace {
constexpr const char* kAnnotation = "lockstep::collective";
}

std::string qualified_name(const NamedDecl* d) {
  std::vector<std::string> parts{d->getNameAsString()};
  for (const DeclContext* dc = d->getDeclContext(); dc; dc = dc->getParent()) {
    if (const auto* ns = dyn_cast<NamespaceDecl>(dc)) {
      if (ns->isInline() || ns->isAnonymousNamespace()) continue;
      parts.push_back(ns->getNameAsString());
    } else if (const auto* rd = dyn_cast<RecordDecl>(dc)) {
      if (rd->getIdentifier()) parts.push_back(rd->getNameAsString());
    }
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!out.empty()) out += "::";
    out += *it;
  }
  return out;
}

bool has_collective_annotation(const FunctionDecl* f) {
  for (const FunctionDecl* r : f->redecls())
    for (const auto* a : r->specific_attrs<AnnotateAttr>())
      if (a->getAnnotation() == kAnnotation) return true;
  return false;
}

bool is_method_named(const CXXMethodDecl* m, std::initializer_list<const char*> names) {
  if (!m || !m->getIdentifier()) return false;
  for (const char* n : names)
    if (m->getName() == n) return true;
  return false;
}

bool is_istream(const Expr* e) {
  if (!e) return false;
  const auto* rd = e->getType().getNonReferenceType()->getAsCXXRecordDecl();
  if (!rd) return false;
  std::function<bool(const CXXRecordDecl*)> walk = [&](const CXXRecordDecl* r) {
    if (r->getName() == "basic_istream" || r->getName() == "basic_ifstream") return true;
    if (!r->hasDefinition()) return false;
    for (const auto& b : r->bases())
      if (const auto* br = b.getType()->getAsCXXRecordDecl(); br && walk(br)) return true;
    return false;
  };
  return walk(rd);
}

bool is_allocation(const CallExpr* call) {
  const FunctionDecl* f = call->getDirectCallee();
  if (!f || !f->getIdentifier()) return false;
  auto n = f->getName();
  return n == "malloc" || n == "calloc" || n == "realloc" || n == "aligned_alloc";
}

bool is_view_of_object(const CallExpr* call) {
  if (const auto* mc = dyn_cast<CXXMemberCallExpr>(call))
    return is_method_named(mc->getMethodDecl(), {"data", "begin", "end", "cbegin", "cend", "rbegin", "rend"});
  if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(call))
    return oc->getOperator() == OO_Plus || oc->getOperator() == OO_Minus || oc->getOperator() == OO_PlusPlus;
  const FunctionDecl* f = call->getDirectCallee();
  return f && f->getIdentifier() && (f->getName() == "begin" || f->getName() == "end");
}

bool is_loop(const Stmt* t) {
  return t && (isa<ForStmt>(t) || isa<WhileStmt>(t) || isa<DoStmt>(t) || isa<CXXForRangeStmt>(t));
}

bool holds_data(QualType t) {
  t = t.getNonReferenceType();
  QualType elem;
  if (const auto* at = t->getAsArrayTypeUnsafe()) {
    elem = at->getElementType();
  } else if (t->isPointerType()) {
    elem = t->getPointeeType();
  } else if (const auto* rd = t->getAsCXXRecordDecl(); rd && rd->hasDefinition()) {
    for (const auto* m : rd->methods()) {
      if (m->getOverloadedOperator() == OO_Subscript || (m->getIdentifier() && m->getName() == "data")) {
        elem = m->getReturnType().getNonReferenceType();
        if (elem->isPointerType()) elem = elem->getPointeeType();
        break;
      }
    }
  }
  if (elem.isNull()) return true;
  elem = elem.getCanonicalType();
  return elem->isArithmeticType() || elem->isVoidType() || elem->isEnumeralType() || elem->isDependentType();
}

bool TypeQueries::is_buffer_class(QualType t) {
  const auto* rd = t.getNonReferenceType()->getAsCXXRecordDecl();
  if (!rd || !rd->hasDefinition()) return false;
  if (auto it = buffer_classes_.find(rd); it != buffer_classes_.end()) return it->second;
  bool result = false;
  for (const auto* m : rd->methods()) {
    if (m->getOverloadedOperator() == OO_Subscript || (m->getIdentifier() && m->getName() == "data")) {
      result = true;
      break;
    }
  }
  buffer_classes_[rd] = result;
  return result;
}

bool TypeQueries::holds_memory(QualType t) {
  t = t.getNonReferenceType();
  return t->isPointerType() || t->isArrayType() || is_buffer_class(t);
}

}  // namespace lockstep::lint
