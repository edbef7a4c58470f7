// Package xgboost is the ML policy for XGBoost collective (Rabit) training:
// the DMLC_* variables that point every worker at the tracker on pod 0.
package xgboost
