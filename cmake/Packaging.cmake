# .deb packages of the installed components (CPack; scripts/package-debs.sh
# runs it): libtessel-runtime0 (the shared library; dpkg-shlibdeps computes
# its dependencies: libc6, libstdc++6, libgcc-s1), libtessel-runtime-dev
# (headers, CMake package, pkg-config file; depends on the runtime of the
# same version) and tessel-tools (tessel-compile, -run, -inspect, -bench;
# their dependencies computed the same way). Installed under /usr.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tessel)
set(CPACK_PACKAGE_VENDOR "Tessel")
set(CPACK_PACKAGE_CONTACT "Tessel developers <tessel@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Ahead-of-time ONNX compiler for NVIDIA Tensor Cores")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev tools)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libtessel-runtime0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
  "Tessel runtime: runs Tessel engines (.tsl) on Tensor Cores, CUDA cores or the CPU")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libtessel-runtime-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libtessel-runtime0 (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_DEV_DESCRIPTION
  "Tessel runtime development files: C and C++ headers, CMake package, pkg-config file")
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME tessel-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "libtessel-runtime0 (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_TOOLS_DESCRIPTION
  "Tessel tools: tessel-compile (ONNX to engine), tessel-run, tessel-inspect, tessel-bench")
# dpkg-shlibdeps finds the runtime that the tools link in the build tree.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/runtime)
include(CPack)
