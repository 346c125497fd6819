//go:build !amd64

package replay

// vecWords is false where the word loops have no vector version.
var vecWords = false

func fillVec(p *uint64, n int, v uint64) { panic("replay: no vector word loops on this machine") }

func addVec(p *uint64, n int, d uint64) { panic("replay: no vector word loops on this machine") }
