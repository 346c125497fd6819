package audit

// Batch is the document of several unrelated traces, each analysed alone.
// Fields may be added, never renamed.
type Batch struct {
	// Files are the analyses of the traces that could be read, in
	// argument order.
	Files []*Analysis `json:"files"`
}
