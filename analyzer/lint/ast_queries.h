// Questions the lint analysis asks of the AST: qualified names, the collective annotation, whether a type
// holds elements (pointers, arrays, containers) and which calls read input, allocate or view an object.
#pragma once

#include <clang/AST/Type.h>
#include <llvm/ADT/DenseMap.h>

#include <initializer_list>
#include <string>

namespace clang {
class CallExpr;
class CXXMethodDecl;
class CXXRecordDecl;
class Expr;
class FunctionDecl;
class NamedDecl;
class Stmt;
}  // namespace clang

namespace lockstep::lint {

// "ns::Class::method", skipping inline and anonymous namespaces (so std::__1::rand reads std::rand).
std::string qualified_name(const clang::NamedDecl* d);
// Declared `[[clang::annotate("lockstep::collective")]]` on any redeclaration.
bool has_collective_annotation(const clang::FunctionDecl* f);
bool is_method_named(const clang::CXXMethodDecl* m, std::initializer_list<const char*> names);
// The expression's type is (derived from) std::basic_istream.
bool is_istream(const clang::Expr* e);
// malloc, calloc, realloc, aligned_alloc.
bool is_allocation(const clang::CallExpr* call);
// begin()/end()/data() and iterator arithmetic: the result refers into the object's elements.
bool is_view_of_object(const clang::CallExpr* call);
bool is_loop(const clang::Stmt* t);
// Elements of this pointer, array or container are data (numbers, bytes), not handles or records.
bool holds_data(clang::QualType t);

// Type queries whose answers are cached per translation unit; one object per analyzed AST.
class TypeQueries {
 public:
  // A class whose objects hold elements: has data() or operator[].
  bool is_buffer_class(clang::QualType t);
  // A pointer, an array or a buffer class: the analysis tracks what it holds apart from its value.
  bool holds_memory(clang::QualType t);

 private:
  llvm::DenseMap<const clang::CXXRecordDecl*, bool> buffer_classes_;
};

}  // namespace lockstep::lint
