# Debian's libxgboost-dev installs the C API header and library but no CMake package.
find_path(XGBoost_INCLUDE_DIR NAMES xgboost/c_api.h)
find_library(XGBoost_LIBRARY NAMES xgboost)
if(XGBoost_INCLUDE_DIR AND EXISTS "${XGBoost_INCLUDE_DIR}/xgboost/version_config.h")
  file(STRINGS "${XGBoost_INCLUDE_DIR}/xgboost/version_config.h" _xgb_ver REGEX "#define XGBOOST_VER_(MAJOR|MINOR|PATCH)")
  string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3" XGBoost_VERSION "${_xgb_ver}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(XGBoost
  REQUIRED_VARS XGBoost_LIBRARY XGBoost_INCLUDE_DIR
  VERSION_VAR XGBoost_VERSION)
if(XGBoost_FOUND AND NOT TARGET XGBoost::xgboost)
  add_library(XGBoost::xgboost UNKNOWN IMPORTED)
  set_target_properties(XGBoost::xgboost PROPERTIES
    IMPORTED_LOCATION "${XGBoost_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${XGBoost_INCLUDE_DIR}")
endif()
mark_as_advanced(XGBoost_INCLUDE_DIR XGBoost_LIBRARY)
