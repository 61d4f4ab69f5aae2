package store

// unverifiedReason is the reason of the answer an unverified approval gives
// its request ([Approval.Answer]): what the model, the records and the
// terminal are told of a decision the store holds but tollgate did not make.
const unverifiedReason = "the decision on this request in the store was not made through tollgate " +
	"(it carries no valid MAC: it was written into the database directly, decided by a process with another store key, " +
	"or decided before tollgate sealed its decisions); the call was not run; to run it, ask for it again and decide the new request"
