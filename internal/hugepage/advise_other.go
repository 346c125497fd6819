//go:build !linux

package hugepage

import "unsafe"

const huge = 2 << 20

func advise(unsafe.Pointer, uintptr) {}

func release(unsafe.Pointer, uintptr) {}
