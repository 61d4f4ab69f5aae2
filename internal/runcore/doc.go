// Package runcore is what the hosts of runs share and a program does not
// call: the run configuration's checks and pins ([CheckConfig],
// [PinFiles], [CheckPins]), the builder contract and its governance check
// ([Checked], [CheckBuilt]), the stored form of a run (its events,
// [LoadConfig], [LoadState], what a halt and a cancel store), the durable
// driver of runs on an engine ([Durable], [Engine], [DurableQueue]; package
// internal/dbosengine runs it on DBOS Transact), the build cache
// ([BuildCache]) and the tenants' rule layers ([WithLayer]). Package runs
// is its public face: runs.Host and the types it aliases.
package runcore
