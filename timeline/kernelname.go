package timeline

import "strings"

// ShortKernelName is a kernel's demangled name shortened as Nsight Systems
// shortens it (its shortName): the function's own name, without its return
// type, namespaces, template arguments and parameters ("void
// at::native::vectorized_elementwise_kernel<4, ...>(int, ...)" ->
// "vectorized_elementwise_kernel"). A name that is short already, or that
// does not parse, is returned as it is.
func ShortKernelName(name string) string {
	if !strings.ContainsAny(name, "<(:") {
		return name
	}
	s := strings.ReplaceAll(name, "(anonymous namespace)::", "")
	s = strings.TrimPrefix(s, "void ")
	// The qualified name ends where its template arguments or parameters
	// start.
	end := len(s)
	for i := 0; i < len(s); i++ {
		if s[i] == '<' || s[i] == '(' {
			end = i
			break
		}
	}
	q := strings.TrimSpace(s[:end])
	if i := strings.LastIndex(q, "::"); i >= 0 {
		q = q[i+2:]
	}
	if q == "" || strings.ContainsAny(q, " >)") {
		return name
	}
	return q
}
